// Package tcpconn reports TCP connections as bcc's tcpconnect and
// tcpaccept do: each connection a process makes, with the time it took to
// be established (or the error it failed with), and each one a process
// accepts, with the time it waited in the accept queue; from the
// sock:inet_sock_set_state and accept tracepoints (no kprobes).
package tcpconn

import (
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Pid      int            // only this process (0: every one)
	Cgroup   *cgroup.Target // only tasks of this cgroup and its children (nil: every one)
	Ports    []uint16       // only these ports: remote (connects) or local (accepts)
	Family   int            // 4 or 6: only IPv4 or IPv6 (0: both)
	Failed   bool           // connects: only those that failed
	Comms    []string       // only these command names
	Duration time.Duration
}

// Conn is one connection a process made (Connect) or accepted.
type Conn struct {
	TimeNS    uint64 `json:"time_ns"`
	Pid       uint32 `json:"pid"`
	Tid       uint32 `json:"tid"`
	UID       uint32 `json:"uid"`
	Comm      string `json:"comm"`
	Family    int    `json:"family"`
	LAddr     string `json:"laddr"`
	LPort     uint16 `json:"lport"`
	RAddr     string `json:"raddr"`
	RPort     uint16 `json:"rport"`
	ConnectNS uint64 `json:"connect_ns,omitempty"`      // connects: SYN sent to established (or failed)
	QueuedNS  uint64 `json:"accept_queue_ns,omitempty"` // accepts: established to accepted
	Errno     string `json:"errno,omitempty"`           // connects that failed (ECONNREFUSED)
	accept    bool
}

// Vocabulary is what tcpconnect's and tcpaccept's JSON keys mean beyond the
// shared vocabulary (internal/model/jsonout); docs/tcpconnect.md and
// docs/tcpaccept.md say the same.
var Vocabulary = map[string]string{
	"connect_ns":      "tcpconnect: from the SYN sent to the connection established (or failed), in nanoseconds",
	"accept_queue_ns": "tcpaccept: from the connection established to its accept, in nanoseconds (absent: established before tracing began)",
}

// Counts are what the program counted besides the connections it sent
// (each tag names its member of enum tcpconn_counter).
type Counts struct {
	LostRing uint64 `counter:"TCPCONN_LOST_RING"` // the ring buffer was full
	LostMap  uint64 `counter:"TCPCONN_LOST_MAP"`  // the pending map was full
	Untimed  uint64 `counter:"TCPCONN_UNTIMED"`   // accepted, established before tracing began
}

// Result of a run: the connections read and shown, and the counts.
type Result bpfskel.Streamed[Counts]

// Connects reports each connection a process makes when it is established
// or fails, until the duration passes or ctx ends.
func Connects(ctx context.Context, o Options, out func(Conn)) (*Result, error) {
	return run(ctx, o, false, out)
}

// Accepts reports each connection a process accepts (accept, accept4),
// until the duration passes or ctx ends.
func Accepts(ctx context.Context, o Options, out func(Conn)) (*Result, error) {
	return run(ctx, o, true, out)
}

func run(ctx context.Context, o Options, accepts bool, out func(Conn)) (*Result, error) {
	var maps tcpconnMaps
	hooks := []bpfskel.Hook{bpfskel.BTFTracepoint("inet_sock_set_state", tcpconnProgTpBtfSetState, tcpconnProgRawSetState)}
	if accepts {
		for _, c := range []struct{ name, prog string }{{"accept4", tcpconnProgExitAccept4}, {"accept", tcpconnProgExitAccept}} {
			if _, err := tracefs.ID("syscalls:sys_exit_" + c.name); err != nil && c.name != "accept4" {
				continue // accept4 is on every kernel: its absence is an error, at attach
			}
			hooks = append(hooks, bpfskel.TracepointHook("syscalls", "sys_exit_"+c.name, c.prog))
		}
	}
	name := "TCP connect tracer"
	if accepts {
		name = "TCP accept tracer"
	}
	tool := bpfskel.Tool{Cgroup: o.Cgroup,
		Name: name, Spec: loadTcpconn, Maps: &maps, Hooks: hooks,
		Consts: map[string]any{tcpconnVarTargetPid: uint32(o.Pid), tcpconnVarAccepts: accepts},
	}
	st := bpfskel.Stream[tcpconnTcpconnEvent, Conn, Counts]{Ring: &maps.Events, Counters: &maps.Counts, Duration: o.Duration}
	conn := func(e *tcpconnTcpconnEvent) Conn { return connOf(e, accepts) }
	res, err := st.Run(ctx, tool, conn, o.keep, out)
	return (*Result)(res), err
}

func connOf(e *tcpconnTcpconnEvent, accept bool) Conn {
	l, r, fam := e.Conn.Ends()
	x := Conn{TimeNS: e.TimeNs, Pid: e.Pid, Tid: e.Tid, UID: e.Uid, Comm: bpfmaps.CString(e.Comm[:]), Family: fam,
		LAddr: l.String(), LPort: e.Conn.Lport, RAddr: r.String(), RPort: e.Conn.Rport, accept: accept}
	if accept {
		x.QueuedNS = e.LatencyNs
	} else {
		x.ConnectNS = e.LatencyNs
	}
	if e.Err != 0 {
		x.Errno = unix.ErrnoName(unix.Errno(e.Err))
	}
	return x
}

func (o Options) keep(x Conn) bool {
	port := x.RPort
	if x.accept {
		port = x.LPort
	}
	switch {
	case o.Family != 0 && x.Family != o.Family,
		!model.Allows(o.Ports, port),
		o.Failed && x.Errno == "",
		!model.Allows(o.Comms, x.Comm):
		return false
	}
	return true
}

// Columns are the text view's optional columns (bcc's -t, -U, -L).
type Columns struct {
	Time, UID, LPort bool
}

// ConnectHeader is tcpconnect's first line, as bcc's tcpconnect prints it
// with tcpconnlat's LAT(ms) and the failure's errno added.
func ConnectHeader(w io.Writer, c Columns) {
	head(w, c)
	fmt.Fprintf(w, "%-16s %-2s %-15s ", "COMM", "IP", "SADDR")
	if c.LPort {
		fmt.Fprintf(w, "%-5s ", "LPORT")
	}
	fmt.Fprintf(w, "%-15s %-5s %8s %s\n", "DADDR", "DPORT", "LAT(ms)", "RESULT")
}

// AcceptHeader is tcpaccept's first line, as bcc's tcpaccept prints it,
// with the time waited in the accept queue added.
func AcceptHeader(w io.Writer, c Columns) {
	head(w, c)
	fmt.Fprintf(w, "%-16s %-2s %-15s %-5s %-15s %-5s %s\n", "COMM", "IP", "RADDR", "RPORT", "LADDR", "LPORT", "QUEUED(ms)")
}

func head(w io.Writer, c Columns) {
	bpfskel.TimeHeader(w, c.Time)
	if c.UID {
		fmt.Fprintf(w, "%-6s ", "UID")
	}
	fmt.Fprintf(w, "%-7s ", "PID")
}

// WriteText prints the connection as one line under its header.
func (x Conn) WriteText(w io.Writer, c Columns) {
	bpfskel.TimeColumn(w, c.Time, x.TimeNS)
	if c.UID {
		fmt.Fprintf(w, "%-6d ", x.UID)
	}
	fmt.Fprintf(w, "%-7d %-16s %-2d ", x.Pid, x.Comm, x.Family)
	if x.accept {
		queued := "-" // established before tracing began
		if x.QueuedNS != 0 {
			queued = fmt.Sprintf("%.3f", float64(x.QueuedNS)/1e6)
		}
		fmt.Fprintf(w, "%-15s %-5d %-15s %-5d %s\n", x.RAddr, x.RPort, x.LAddr, x.LPort, queued)
		return
	}
	fmt.Fprintf(w, "%-15s ", x.LAddr)
	if c.LPort {
		fmt.Fprintf(w, "%-5d ", x.LPort)
	}
	result := "ok"
	if x.Errno != "" {
		result = x.Errno
	}
	fmt.Fprintf(w, "%-15s %-5d %8.3f %s\n", x.RAddr, x.RPort, float64(x.ConnectNS)/1e6, result)
}

// WriteJSON writes the connection as one line (JSON Lines).
func (x Conn) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view: how many connections, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	c := r.Counts
	fmt.Fprintf(w, "# %s, %d lost (ring full %d, pending map full %d)",
		r.Summary("connections"), c.LostRing+c.LostMap, c.LostRing, c.LostMap)
	if c.Untimed > 0 {
		fmt.Fprintf(w, ", %d accepted untimed (established before tracing began)", c.Untimed)
	}
	fmt.Fprintln(w)
}
