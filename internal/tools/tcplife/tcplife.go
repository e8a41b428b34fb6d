// Package tcplife reports each TCP session when it closes (bcc's
// tcplife): the process, the addresses and ports, the bytes sent and
// received and how long it lasted, from the sock:inet_sock_set_state
// tracepoint and the socket's own byte counters.
package tcplife

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Pid         int      // only sessions of this process (0: every one)
	LocalPorts  []uint16 // only these local ports (bcc's -L)
	RemotePorts []uint16 // only these remote ports (bcc's -D)
	Family      int      // 4 or 6: only IPv4 or IPv6 (0: both)
	Comms       []string // only these command names
	Duration    time.Duration
}

// Session is one TCP session, reported at its close.
type Session struct {
	TimeNS     uint64 `json:"time_ns"`
	Pid        uint32 `json:"pid"`  // 0: no process was seen acting on it
	Comm       string `json:"comm"` // "" with pid 0
	Family     int    `json:"family"`
	LAddr      string `json:"laddr"`
	LPort      uint16 `json:"lport"`
	RAddr      string `json:"raddr"`
	RPort      uint16 `json:"rport"`
	TxBytes    uint64 `json:"tx_bytes"`
	RxBytes    uint64 `json:"rx_bytes"`
	DurationNS uint64 `json:"duration_ns"`
}

// Vocabulary is what tcplife's JSON keys mean beyond the shared vocabulary
// (internal/model/jsonout); docs/tcplife.md says the same.
var Vocabulary = map[string]string{
	"tx_bytes": "tcplife: bytes the session sent that the peer acknowledged",
	"rx_bytes": "tcplife: bytes the session received",
}

// Counts are what the program counted besides the sessions it sent (each
// tag names its member of enum tcplife_counter).
type Counts struct {
	LostRing uint64 `counter:"TCPLIFE_LOST_RING"` // the ring buffer was full
	LostMap  uint64 `counter:"TCPLIFE_LOST_MAP"`  // the socket map was full
	Unborn   uint64 `counter:"TCPLIFE_UNBORN"`    // already open when tracing began
}

// Result of a run: the sessions read and shown, and the counts.
type Result bpfskel.Streamed[Counts]

// Run reports each session to out as it closes, until the duration
// passes or ctx ends.
func Run(ctx context.Context, o Options, out func(Session)) (*Result, error) {
	var maps tcplifeMaps
	tool := bpfskel.Tool{
		Name: "TCP session tracer", Spec: loadTcplife, Maps: &maps,
		Consts: map[string]any{tcplifeVarTargetPid: uint32(o.Pid)},
		Hooks:  []bpfskel.Hook{bpfskel.BTFTracepoint("inet_sock_set_state", tcplifeProgTpBtfSetState, tcplifeProgRawSetState)},
	}
	st := bpfskel.Stream[tcplifeTcplifeEvent, Session, Counts]{Ring: &maps.Events, Counters: &maps.Counts, Duration: o.Duration}
	res, err := st.Run(ctx, tool, sessionOf, o.keep, out)
	return (*Result)(res), err
}

func sessionOf(e *tcplifeTcplifeEvent) Session {
	l, r, fam := e.Conn.Ends()
	return Session{TimeNS: e.TimeNs, Pid: e.Pid, Comm: bpfmaps.CString(e.Comm[:]), Family: fam,
		LAddr: l.String(), LPort: e.Conn.Lport, RAddr: r.String(), RPort: e.Conn.Rport,
		TxBytes: e.TxBytes, RxBytes: e.RxBytes, DurationNS: e.DurationNs}
}

func (o Options) keep(x Session) bool {
	switch {
	case o.Family != 0 && x.Family != o.Family,
		!model.Allows(o.LocalPorts, x.LPort),
		!model.Allows(o.RemotePorts, x.RPort),
		!model.Allows(o.Comms, x.Comm):
		return false
	}
	return true
}

// Header is the text view's first line, as bcc's tcplife prints it.
func Header(w io.Writer, timestamps bool) {
	bpfskel.TimeHeader(w, timestamps)
	fmt.Fprintf(w, "%-7s %-12s %-15s %-5s %-15s %-5s %5s %5s %s\n", "PID", "COMM", "LADDR", "LPORT", "RADDR", "RPORT", "TX_KB", "RX_KB", "MS")
}

// WriteText prints the session as one line under Header (a pid of 0 and
// comm "-": no process was seen acting on the socket).
func (x Session) WriteText(w io.Writer, timestamps bool) {
	bpfskel.TimeColumn(w, timestamps, x.TimeNS)
	comm := x.Comm
	if comm == "" {
		comm = "-"
	}
	fmt.Fprintf(w, "%-7d %-12.12s %-15s %-5d %-15s %-5d %5d %5d %.2f\n", x.Pid, comm, x.LAddr, x.LPort, x.RAddr, x.RPort,
		x.TxBytes/1024, x.RxBytes/1024, float64(x.DurationNS)/1e6)
}

// WriteJSON writes the session as one line (JSON Lines).
func (x Session) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view: how many sessions, those not shown
// because they began before tracing, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	c := r.Counts
	fmt.Fprintf(w, "# %s, %d already open when tracing began, %d lost (ring full %d, socket map full %d)\n",
		r.Summary("sessions"), c.Unborn, c.LostRing+c.LostMap, c.LostRing, c.LostMap)
}
