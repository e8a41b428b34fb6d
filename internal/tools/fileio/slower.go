package fileio

import (
	"context"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"io"
	"runtime"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// SlowerOptions configure fileslower.
type SlowerOptions struct {
	Pid      int
	Cgroup   *cgroup.Target // only its tasks' calls (nil: every task)
	Command  []string
	All      bool          // pipes, sockets and devices too
	Min      time.Duration // report calls at least this long
	Duration time.Duration
}

// Slow is one read or write that took at least the threshold. A
// sendfile, splice or copy_file_range is two: a read of its input and a
// write of its output, with the same time.
type Slow struct {
	TimeNS     uint64 `json:"time_ns"` // the call's entry, CLOCK_MONOTONIC
	Pid        uint32 `json:"pid"`
	Tid        uint32 `json:"tid"`
	Comm       string `json:"comm"`
	Syscall    string `json:"syscall"`
	Direction  string `json:"direction"` // read or write
	Bytes      int64  `json:"bytes"`     // what the call returned
	DurationNS uint64 `json:"duration_ns"`
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Dev        string `json:"dev"`
	Ino        uint64 `json:"ino"`
}

// SlowerResult is what a run saw besides the calls.
type SlowerResult struct {
	Calls    uint64
	Lost     Lost
	ExitCode int
	Elapsed  time.Duration
}

// Slower reports each read or write slower than o.Min to out (on the ring
// reader's goroutine) until the run ends.
func Slower(ctx context.Context, o SlowerOptions, out func(Slow)) (*SlowerResult, error) {
	var maps filesMaps
	s, err := session(&maps, o.Pid, o.Cgroup, o.Command, map[string]any{
		filesVarAllFiles: o.All, filesVarSlowMode: true, filesVarMinNs: uint64(o.Min)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	res := &SlowerResult{}
	ps := &paths{m: map[fileID]string{}}
	err = readEvents(s, &maps, ps, func(e *filesFilesSlow) {
		res.Calls++
		out(slowOf(e, ps))
	})
	if err != nil {
		return nil, err
	}
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	res.ExitCode, res.Elapsed = run.ExitCode, run.Elapsed
	if res.Lost, err = readLost(&maps); err != nil {
		return nil, err
	}
	return res, nil
}

func slowOf(e *filesFilesSlow, ps *paths) Slow {
	dir := "read"
	if e.Write != 0 {
		dir = "write"
	}
	return Slow{TimeNS: e.StartNs, Pid: e.Pid, Tid: e.Tid, Comm: bpfmaps.CString(e.Comm[:]),
		Syscall: syscalls.Name(runtime.GOARCH, int(e.Nr)), Direction: dir, Bytes: e.Bytes, DurationNS: e.LatencyNs,
		Path: ps.name(e.Dev, e.Ino), Kind: Kind(e.Mode), Dev: Dev(e.Dev), Ino: e.Ino}
}

// SlowHeader is the text view's first line, as bcc's fileslower prints it.
func SlowHeader(w io.Writer) {
	fmt.Fprintf(w, "%-14s %-16s %-7s %-1s %-16s %10s %10s %s\n", "TIME(s)", "COMM", "TID", "D", "SYSCALL", "BYTES", "LAT(ms)", "FILENAME")
}

// WriteText prints the call as one line under SlowHeader.
func (x Slow) WriteText(w io.Writer) {
	d := "R"
	if x.Direction == "write" {
		d = "W"
	}
	fmt.Fprintf(w, "%-14.6f %-16s %-7d %-1s %-16s %10d %10.2f %s\n",
		float64(x.TimeNS)/1e9, x.Comm, x.Tid, d, x.Syscall, x.Bytes, float64(x.DurationNS)/1e6, x.Path)
}

// WriteJSON writes the call as one line (JSON Lines).
func (x Slow) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view.
func (r *SlowerResult) WriteFooter(w io.Writer) {
	fmt.Fprintf(w, "# %d slow calls in %s, %s\n", r.Calls, r.Elapsed.Round(time.Millisecond), r.Lost)
}
