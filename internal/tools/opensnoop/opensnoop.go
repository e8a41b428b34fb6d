// Package opensnoop reports every file open as it returns (bcc's
// opensnoop): who called open, openat or openat2, on which path, with
// which flags, and the file descriptor or error it got, from the syscalls
// tracepoints.
package opensnoop

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
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Options configure a run.
type Options struct {
	Pid, Tid int            // only this process, this thread (0: every one)
	Cgroup   *cgroup.Target // only tasks of this cgroup and its children (nil: every one)
	Failed   bool           // only opens that failed (bcc's -x)
	Comms    []string       // only these command names
	Duration time.Duration
}

// Open is one open.
type Open struct {
	TimeNS  uint64 `json:"time_ns"`
	Pid     uint32 `json:"pid"`
	Tid     uint32 `json:"tid"`
	UID     uint32 `json:"uid"`
	Comm    string `json:"comm"`
	Syscall string `json:"syscall"` // open, openat or openat2
	Path    string `json:"path"`
	Flags   uint64 `json:"flags"`
	Mode    uint32 `json:"file_mode,omitempty"` // with O_CREAT or O_TMPFILE
	Ret     int32  `json:"ret"`                 // the fd, or -errno
	Errno   string `json:"errno,omitempty"`
	Cut     bool   `json:"path_cut,omitempty"`
}

// PathMax is the longest path kept, in bytes (OPENSNOOP_PATH less its NUL).
const PathMax = len(opensnoopOpensnoopEvent{}.Path) - 1

// Vocabulary is what opensnoop's JSON keys mean beyond the shared
// vocabulary (internal/model/jsonout); docs/opensnoop.md says the same.
var Vocabulary = map[string]string{
	"flags":     "opensnoop: the open flags (O_RDONLY, O_CREAT…) as a number",
	"file_mode": "opensnoop: the permission bits given to a file created by the open",
	"path_cut":  "opensnoop: the path filled the 255 bytes kept, and may go on",
}

// Result of a run: the opens read and shown, and what was lost.
type Result bpfskel.Streamed[bpfskel.InFlightLost]

// hooks are the tracepoints of the calls this kernel has (arm64 has no
// open(2), only openat and openat2); exits before entries, so no entry is
// left without its exit.
func hooks() []bpfskel.Hook {
	var exits, entries []bpfskel.Hook
	for _, c := range []struct{ name, enter, exit string }{
		{"open", opensnoopProgEnterOpen, opensnoopProgExitOpen},
		{"openat", opensnoopProgEnterOpenat, opensnoopProgExitOpenat},
		{"openat2", opensnoopProgEnterOpenat2, opensnoopProgExitOpenat2},
	} {
		if _, err := tracefs.ID("syscalls:sys_enter_" + c.name); err != nil && c.name != "openat" {
			continue // openat is on every kernel: its absence is an error, at attach
		}
		exits = append(exits, bpfskel.TracepointHook("syscalls", "sys_exit_"+c.name, c.exit))
		entries = append(entries, bpfskel.TracepointHook("syscalls", "sys_enter_"+c.name, c.enter))
	}
	return append(exits, entries...)
}

// Run reports each open to out as it returns, until the duration passes
// or ctx ends.
func Run(ctx context.Context, o Options, out func(Open)) (*Result, error) {
	var maps opensnoopMaps
	tool := bpfskel.Tool{Cgroup: o.Cgroup,
		Name: "open tracer", Spec: loadOpensnoop, Maps: &maps,
		Consts: map[string]any{
			opensnoopVarTargetPid: uint32(o.Pid), opensnoopVarTargetTid: uint32(o.Tid),
			opensnoopVarFailedOnly: o.Failed,
		},
		Hooks: hooks(),
	}
	st := bpfskel.Stream[opensnoopOpensnoopEvent, Open, bpfskel.InFlightLost]{Ring: &maps.Events, Counters: &maps.Lost, Duration: o.Duration}
	res, err := st.Run(ctx, tool, openOf, o.keep, out)
	return (*Result)(res), err
}

var callNames = map[opensnoopOpensnoopCall]string{
	opensnoopOpensnoopCallOPENSNOOP_OPEN:    "open",
	opensnoopOpensnoopCallOPENSNOOP_OPENAT:  "openat",
	opensnoopOpensnoopCallOPENSNOOP_OPENAT2: "openat2",
}

func openOf(e *opensnoopOpensnoopEvent) Open {
	path := bpfmaps.CString(e.Path[:])
	x := Open{TimeNS: e.TimeNs, Pid: e.Pid, Tid: e.Tid, UID: e.Uid, Comm: bpfmaps.CString(e.Comm[:]),
		Syscall: callNames[opensnoopOpensnoopCall(e.Call)], Path: path, Flags: e.Flags, Ret: e.Ret, Cut: len(path) == PathMax}
	// O_TMPFILE carries O_DIRECTORY's bit: all of it, not any bit, marks it.
	if e.Flags&unix.O_CREAT != 0 || e.Flags&unix.O_TMPFILE == unix.O_TMPFILE {
		x.Mode = e.Mode
	}
	if e.Ret < 0 {
		x.Errno = unix.ErrnoName(unix.Errno(-e.Ret))
	}
	return x
}

func (o Options) keep(x Open) bool { return model.Allows(o.Comms, x.Comm) }

// Columns are the text view's optional columns (bcc's -T, -U, -e).
type Columns struct {
	Time, UID, Flags bool
}

// Header is the text view's first line, as bcc's opensnoop prints it.
func Header(w io.Writer, c Columns) {
	bpfskel.TimeHeader(w, c.Time)
	if c.UID {
		fmt.Fprintf(w, "%-6s ", "UID")
	}
	fmt.Fprintf(w, "%-7s %-16s %4s %3s ", "PID", "COMM", "FD", "ERR")
	if c.Flags {
		fmt.Fprintf(w, "%-8s ", "FLAGS")
	}
	fmt.Fprintln(w, "PATH")
}

// WriteText prints the open as one line under Header: FD -1 and the errno
// in ERR when it failed.
func (x Open) WriteText(w io.Writer, c Columns) {
	bpfskel.TimeColumn(w, c.Time, x.TimeNS)
	if c.UID {
		fmt.Fprintf(w, "%-6d ", x.UID)
	}
	fd, errno := x.Ret, int32(0)
	if x.Ret < 0 {
		fd, errno = -1, -x.Ret
	}
	fmt.Fprintf(w, "%-7d %-16s %4d %3d ", x.Pid, x.Comm, fd, errno)
	if c.Flags {
		fmt.Fprintf(w, "%08o ", x.Flags)
	}
	path := x.Path
	if x.Cut {
		path += "..."
	}
	fmt.Fprintln(w, strings.ToValidUTF8(path, "?"))
}

// WriteJSON writes the open as one line (JSON Lines).
func (x Open) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view: how many opens, and what was lost.
func (r *Result) WriteFooter(w io.Writer) {
	r.Counts.Footer(w, r.Tally, "opens")
}
