// Package execsnoop reports every exec as it happens (bcc's execsnoop):
// who called execve or execveat, with which arguments, and what it
// returned, from the syscalls tracepoints.
package execsnoop

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Fails    bool     // also execs that failed (bcc's -x: by default only those that succeeded)
	Comms    []string // only execs whose new name (or failing caller's) is one of these
	Duration time.Duration
}

// Exec is one exec.
type Exec struct {
	TimeNS uint64   `json:"time_ns"`
	Pid    uint32   `json:"pid"`
	PPid   uint32   `json:"ppid"`
	UID    uint32   `json:"uid"`
	Comm   string   `json:"comm"`
	Ret    int32    `json:"ret"`             // 0, or -errno
	Errno  string   `json:"errno,omitempty"` // the failure's name (ENOENT)
	Argv   []string `json:"argv"`
	Cut    bool     `json:"argv_cut,omitempty"` // more arguments, or longer ones, than were kept
}

// Vocabulary is what execsnoop's JSON keys mean beyond the shared
// vocabulary (internal/model/jsonout); docs/execsnoop.md says the same.
var Vocabulary = map[string]string{
	"argv_cut": "execsnoop: the argument list was longer than what was kept (20 arguments of 127 bytes)",
}

// Result of a run: the execs read and shown, and what was lost.
type Result bpfskel.Streamed[bpfskel.InFlightLost]

// Run reports each exec to out as its execve returns, until the duration
// passes or ctx ends.
func Run(ctx context.Context, o Options, out func(Exec)) (*Result, error) {
	var maps execsnoopMaps
	tool := bpfskel.Tool{
		Name: "exec tracer", Spec: loadExecsnoop, Maps: &maps,
		Hooks: []bpfskel.Hook{
			bpfskel.TracepointHook("syscalls", "sys_exit_execve", execsnoopProgExitExecve),
			bpfskel.TracepointHook("syscalls", "sys_exit_execveat", execsnoopProgExitExecveat),
			bpfskel.TracepointHook("syscalls", "sys_enter_execve", execsnoopProgEnterExecve),
			bpfskel.TracepointHook("syscalls", "sys_enter_execveat", execsnoopProgEnterExecveat),
		},
	}
	st := bpfskel.Stream[execsnoopExecsnoopEvent, Exec, bpfskel.InFlightLost]{Ring: &maps.Events, Counters: &maps.Lost,
		Duration: o.Duration, Decode: eventOf}
	res, err := st.Run(ctx, tool, execOf, o.keep, out)
	return (*Result)(res), err
}

// eventOf reads a record: the program sends only the argument slots in
// use, so the rest of the event stays zero.
func eventOf(raw []byte) *execsnoopExecsnoopEvent {
	var e execsnoopExecsnoopEvent
	head := int(unsafe.Offsetof(e.Argv))
	if len(raw) < head {
		return nil
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&e)), unsafe.Sizeof(e)), raw)
	return &e
}

func execOf(e *execsnoopExecsnoopEvent) Exec {
	x := Exec{TimeNS: e.TimeNs, Pid: e.Pid, PPid: e.Ppid, UID: e.Uid, Comm: bpfmaps.CString(e.Comm[:]), Ret: e.Ret, Cut: e.Cut != 0}
	if e.Ret < 0 {
		x.Errno = unix.ErrnoName(unix.Errno(-e.Ret))
	}
	for i := 0; i < int(e.Args) && i < len(e.Argv); i++ {
		x.Argv = append(x.Argv, bpfmaps.CString(e.Argv[i][:]))
	}
	return x
}

func (o Options) keep(x Exec) bool {
	return (o.Fails || x.Ret == 0) && model.Allows(o.Comms, x.Comm)
}

// Header is the text view's first line, as bcc's execsnoop prints it
// (with the time in seconds since boot first when asked).
func Header(w io.Writer, timestamps bool) {
	bpfskel.TimeHeader(w, timestamps)
	fmt.Fprintf(w, "%-16s %-7s %-7s %3s %s\n", "PCOMM", "PID", "PPID", "RET", "ARGS")
}

// WriteText prints the exec as one line under Header.
func (x Exec) WriteText(w io.Writer, timestamps bool) {
	bpfskel.TimeColumn(w, timestamps, x.TimeNS)
	args := strings.Join(x.Argv, " ")
	if x.Cut {
		args += " ..."
	}
	fmt.Fprintf(w, "%-16s %-7d %-7d %3d %s\n", x.Comm, x.Pid, x.PPid, x.Ret, args)
}

// WriteJSON writes the exec as one line (JSON Lines).
func (x Exec) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view: how many execs, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	r.Counts.Footer(w, r.Tally, "execs")
}
