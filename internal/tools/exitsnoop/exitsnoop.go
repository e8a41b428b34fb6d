// Package exitsnoop reports every process exit as it happens (bcc's
// exitsnoop): who exited, how old it was, and its exit code or the signal
// that ended it, from the sched_process_exit tracepoint.
package exitsnoop

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Pid       int            // only this process (0: every one)
	Cgroup    *cgroup.Target // only tasks of this cgroup and its children (nil: every one)
	PerThread bool           // every thread's exit (bcc's --per-thread), not only the process's
	Failed    bool           // only non-zero exits (bcc's -x)
	Comms     []string       // only these command names
	Duration  time.Duration
}

// Exit is one exit.
type Exit struct {
	TimeNS     uint64 `json:"time_ns"`
	Pid        uint32 `json:"pid"`
	Tid        uint32 `json:"tid"`
	PPid       uint32 `json:"ppid"`
	Comm       string `json:"comm"`
	AgeNS      uint64 `json:"age_ns"`
	Code       int    `json:"code"`                  // exit(code); 0 when a signal ended it
	Signal     int    `json:"signal,omitempty"`      // the signal that ended it
	SignalName string `json:"signal_name,omitempty"` // SIGKILL
	Core       bool   `json:"core_dumped,omitempty"`
}

// Vocabulary is what exitsnoop's JSON keys mean beyond the shared
// vocabulary (internal/model/jsonout); docs/exitsnoop.md says the same.
var Vocabulary = map[string]string{
	"age_ns":      "exitsnoop: how long the process (or thread) lived, from fork to exit, in nanoseconds",
	"code":        "exitsnoop: the exit code the process passed to exit (0 when a signal ended it)",
	"signal":      "exitsnoop: the number of the signal that ended the process",
	"signal_name": "exitsnoop: the name of that signal (SIGKILL)",
	"core_dumped": "exitsnoop: the signal dumped core",
}

// Lost counts the exits not reported (each tag names its member of enum
// exitsnoop_counter).
type Lost struct {
	Ring uint64 `counter:"EXITSNOOP_LOST_RING"` // the ring buffer was full
}

// Result of a run: the exits read and shown, and what was lost.
type Result bpfskel.Streamed[Lost]

// Run reports each exit to out as it happens, until the duration passes or
// ctx ends.
func Run(ctx context.Context, o Options, out func(Exit)) (*Result, error) {
	var maps exitsnoopMaps
	tool := bpfskel.Tool{Cgroup: o.Cgroup,
		Name: "exit tracer", Spec: loadExitsnoop, Maps: &maps,
		Consts: map[string]any{
			exitsnoopVarTargetPid: uint32(o.Pid),
			exitsnoopVarPerThread: o.PerThread, exitsnoopVarFailedOnly: o.Failed,
		},
		Hooks: []bpfskel.Hook{bpfskel.BTFTracepoint("sched_process_exit", exitsnoopProgTpBtfExit, exitsnoopProgRawExit)},
	}
	st := bpfskel.Stream[exitsnoopExitsnoopEvent, Exit, Lost]{Ring: &maps.Events, Counters: &maps.Lost, Duration: o.Duration}
	res, err := st.Run(ctx, tool, exitOf, o.keep, out)
	return (*Result)(res), err
}

func exitOf(e *exitsnoopExitsnoopEvent) Exit {
	x := Exit{TimeNS: e.TimeNs, Pid: e.Pid, Tid: e.Tid, PPid: e.Ppid, Comm: bpfmaps.CString(e.Comm[:]), AgeNS: e.AgeNs}
	ws := unix.WaitStatus(e.ExitCode)
	switch {
	case ws.Signaled():
		x.Signal = int(ws.Signal())
		x.SignalName = unix.SignalName(ws.Signal())
		x.Core = ws.CoreDump()
	default:
		x.Code = ws.ExitStatus()
	}
	return x
}

func (o Options) keep(x Exit) bool { return model.Allows(o.Comms, x.Comm) }

// Header is the text view's first line, as bcc's exitsnoop prints it
// (with the time in seconds since boot first when asked).
func Header(w io.Writer, timestamps bool) {
	bpfskel.TimeHeader(w, timestamps)
	fmt.Fprintf(w, "%-16s %-7s %-7s %-7s %-7s %s\n", "PCOMM", "PID", "PPID", "TID", "AGE(s)", "EXIT_CODE")
}

// Status is the exit as bcc words it: 0, "code 3", "signal 9 (KILL)".
func (x Exit) Status() string {
	switch {
	case x.Signal != 0:
		s := fmt.Sprintf("signal %d (%s)", x.Signal, strings.TrimPrefix(x.SignalName, "SIG"))
		if x.Core {
			s += ", core dumped"
		}
		return s
	case x.Code != 0:
		return fmt.Sprintf("code %d", x.Code)
	}
	return "0"
}

// WriteText prints the exit as one line under Header.
func (x Exit) WriteText(w io.Writer, timestamps bool) {
	bpfskel.TimeColumn(w, timestamps, x.TimeNS)
	fmt.Fprintf(w, "%-16s %-7d %-7d %-7d %-7.2f %s\n", x.Comm, x.Pid, x.PPid, x.Tid, float64(x.AgeNS)/1e9, x.Status())
}

// WriteJSON writes the exit as one line (JSON Lines).
func (x Exit) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view: how many exits, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	fmt.Fprintf(w, "# %s, %d lost (ring full)\n", r.Summary("exits"), r.Counts.Ring)
}
