// Package tcpretrans reports each TCP retransmit (bcc's tcpretrans): the
// connection's addresses and ports and its TCP state, from the
// tcp:tcp_retransmit_skb tracepoint; or, counting, the retransmits per
// connection.
package tcpretrans

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Family   int // 4 or 6: only IPv4 or IPv6 (0: both)
	Duration time.Duration
}

// Retransmit is one retransmitted segment, or with Count the retransmits
// of one connection.
type Retransmit struct {
	TimeNS uint64 `json:"time_ns,omitempty"`
	Family int    `json:"family"`
	LAddr  string `json:"laddr"`
	LPort  uint16 `json:"lport"`
	RAddr  string `json:"raddr"`
	RPort  uint16 `json:"rport"`
	State  string `json:"tcp_state,omitempty"` // ESTABLISHED…
	Count  uint64 `json:"count,omitempty"`     // with -c: retransmits of this connection
}

// Vocabulary is what tcpretrans's JSON keys mean beyond the shared
// vocabulary (internal/model/jsonout); docs/tcpretrans.md says the same.
var Vocabulary = map[string]string{
	"tcp_state": "tcpretrans: the connection's TCP state when it retransmitted (ESTABLISHED, SYN_SENT…)",
}

// Lost counts the retransmits not reported (each tag names its member of
// enum tcpretrans_counter).
type Lost struct {
	Ring uint64 `counter:"TCPRETRANS_LOST_RING"` // the ring buffer was full
}

// Result of a run: the retransmits read and shown, and what was lost.
type Result bpfskel.Streamed[Lost]

// states names the TCP states (include/net/tcp_states.h).
var states = []string{1: "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT",
	"CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV"}

// StateName is a TCP state's name as bcc prints it.
func StateName(s uint32) string {
	if int(s) < len(states) && states[s] != "" {
		return states[s]
	}
	return fmt.Sprintf("STATE_%d", s)
}

// Run reports each retransmit to out, until the duration passes or ctx ends.
func Run(ctx context.Context, o Options, out func(Retransmit)) (*Result, error) {
	var maps tcpretransMaps
	tool := bpfskel.Tool{
		Name: "TCP retransmit tracer", Spec: loadTcpretrans, Maps: &maps,
		Hooks: []bpfskel.Hook{bpfskel.BTFTracepoint("tcp_retransmit_skb", tcpretransProgTpBtfRetransmit, tcpretransProgRawRetransmit)},
	}
	st := bpfskel.Stream[tcpretransTcpretransEvent, Retransmit, Lost]{Ring: &maps.Events, Counters: &maps.Lost, Duration: o.Duration}
	keep := func(r Retransmit) bool { return o.Family == 0 || r.Family == o.Family }
	res, err := st.Run(ctx, tool, retransmitOf, keep, out)
	return (*Result)(res), err
}

func retransmitOf(e *tcpretransTcpretransEvent) Retransmit {
	l, r, fam := e.Conn.Ends()
	return Retransmit{TimeNS: e.TimeNs, Family: fam, LAddr: l.String(), LPort: e.Conn.Lport,
		RAddr: r.String(), RPort: e.Conn.Rport, State: StateName(e.State)}
}

// Counter counts retransmits per connection (bcc's -c).
type Counter struct{ flows map[Retransmit]uint64 }

// Add counts one retransmit.
func (c *Counter) Add(r Retransmit) {
	if c.flows == nil {
		c.flows = map[Retransmit]uint64{}
	}
	r.TimeNS, r.State = 0, ""
	c.flows[r]++
}

// Flows are the connections counted, most retransmits first.
func (c *Counter) Flows() []Retransmit {
	var out []Retransmit
	for r, n := range c.flows {
		r.Count = n
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Retransmit) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.LAddr, b.LAddr), cmp.Compare(a.LPort, b.LPort),
			cmp.Compare(a.RAddr, b.RAddr), cmp.Compare(a.RPort, b.RPort))
	})
	return out
}

// Header is the text view's first line, as bcc's tcpretrans prints it
// (the time in seconds since boot first when asked; RETRANSMITS instead of
// STATE when counting).
func Header(w io.Writer, timestamps, counting bool) {
	bpfskel.TimeHeader(w, timestamps && !counting)
	last := "STATE"
	if counting {
		last = "RETRANSMITS"
	}
	fmt.Fprintf(w, "%-2s %-21s %-2s %-21s %s\n", "IP", "LADDR:LPORT", "T>", "RADDR:RPORT", last)
}

// WriteText prints the retransmit (or count) as one line under Header.
func (r Retransmit) WriteText(w io.Writer, timestamps bool) {
	bpfskel.TimeColumn(w, timestamps && r.Count == 0, r.TimeNS)
	last := r.State
	if r.Count != 0 {
		last = fmt.Sprint(r.Count)
	}
	fmt.Fprintf(w, "%-2d %-21s R> %-21s %s\n", r.Family, hostPort(r.LAddr, r.LPort), hostPort(r.RAddr, r.RPort), last)
}

func hostPort(a string, p uint16) string { return fmt.Sprintf("%s:%d", a, p) }

// WriteJSON writes the retransmit as one line (JSON Lines).
func (r Retransmit) WriteJSON(w io.Writer) error { return jsonout.Line(w, r) }

// WriteFooter ends the text view: how many retransmits, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	fmt.Fprintf(w, "# %s, %d lost (ring full)\n", r.Summary("retransmits"), r.Counts.Ring)
}
