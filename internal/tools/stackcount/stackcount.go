// Package stackcount counts the stacks that reach events (bcc's
// stackcount): any tracepoint ("sched:sched_switch", globs too) or user
// function ("u:/path/to/binary:function"), counted per stack in the
// kernel, user stacks walked by the shared unwinder. Results become a
// model.Profile whose periods are hits, so the report, folded stacks and
// flame graph views apply unchanged.
package stackcount

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
)

// Options configure a run.
type Options struct {
	Events    []string // tracepoints (group:name, globs) and u:BINARY:FUNCTION
	Pid       int
	PerThread bool
	User      bool
	Kernel    bool
	Duration  time.Duration
	Version   string
	NoLines   bool // no source lines are shown (no data file): none are read
}

// Errors counted by the program (each tag names its member of enum
// stackcount_error).
type Errors struct {
	StackFailures uint64 `json:"stack_failures" counter:"STACKCOUNT_ERR_STACK"`
	MapFull       uint64 `json:"lost_map_full" counter:"STACKCOUNT_ERR_FULL"`
}

// Result of a run.
type Result struct {
	Profile *model.Profile // periods are hits
	Hits    uint64
	Errors  Errors
	Stacks  unwind.Completeness // how complete the user stacks are, weighted by hits
}

// Hooks turns the events into hooks of the object's two programs; an event
// that names nothing is an error naming it.
func Hooks(events []string, pid int) ([]bpfskel.Hook, error) {
	var hooks []bpfskel.Hook
	var all []string
	for _, e := range events {
		if rest, ok := strings.CutPrefix(e, "u:"); ok {
			i := strings.LastIndex(rest, ":")
			if i <= 0 || i == len(rest)-1 {
				return nil, fmt.Errorf("%q: a user probe is u:BINARY:FUNCTION", e)
			}
			hooks = append(hooks, bpfskel.UprobeHook(rest[:i], rest[i+1:], stackcountProgOnUprobe, false, pid, 0))
			continue
		}
		if !tracefs.IsTracepointSpec(e) {
			return nil, fmt.Errorf("%q: not a tracepoint (group:name) or a user probe (u:BINARY:FUNCTION)", e)
		}
		names := []string{e}
		if strings.ContainsAny(e, "*?[") {
			if all == nil {
				var err error
				if all, err = tracefs.Events(); err != nil {
					return nil, err
				}
			}
			var err error
			if names, err = tracefs.Glob(e, all); err != nil || len(names) == 0 {
				return nil, fmt.Errorf("%q matches no tracepoint (sonde list)", e)
			}
		} else if _, err := tracefs.ID(e); err != nil {
			return nil, fmt.Errorf("%q: no such tracepoint (sonde list): %w", e, err)
		}
		for _, n := range names {
			group, name, _ := strings.Cut(n, ":")
			hooks = append(hooks, bpfskel.TracepointHook(group, name, stackcountProgOnTracepoint))
		}
	}
	return hooks, nil
}

// Run counts until the duration passes or ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	hooks, err := Hooks(o.Events, o.Pid)
	if err != nil {
		return nil, err
	}
	var maps stackcountMaps
	t := bpfskel.Tool{
		Name: "stack counter", Spec: loadStackcount, Maps: &maps, Hooks: hooks,
		Consts: map[string]any{
			stackcountVarTargetPid: uint32(o.Pid), stackcountVarPerThread: o.PerThread,
			stackcountVarUserStacks: o.User, stackcountVarKernelStacks: o.Kernel,
		},
	}
	ld := unwind.Wire(&t, o.Pid, nil)
	s, done, err := ld.OpenKept(t)
	if err != nil {
		return nil, err
	}
	defer done()
	start := time.Now()
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	return build(&maps, ld, o, start, run.Elapsed)
}

// build names the counted stacks and makes the profile.
func build(m *stackcountMaps, ld *unwind.Loader, o Options, start time.Time, elapsed time.Duration) (*Result, error) {
	res := &Result{}
	if err := m.Errors.Read(&res.Errors); err != nil {
		return nil, fmt.Errorf("reading the error counters: %w", err)
	}
	b := builder.New()
	b.Symbolizer = symbolize.DefaultWith(!o.NoLines)
	kbuf := make([]uint64, perf.MaxStack)
	var ubuf [unwind.MaxFrames]uint64
	restore := ld.Restorer(b)
	err := bpfmaps.Drain(m.Counts, func(key stackcountStackcountKey, n uint64) {
		res.Hits += n
		restore(key.At.Pid)
		tid := key.At.Tid
		if !o.PerThread {
			tid = key.At.Pid
		}
		b.SetComm(tid, bpfmaps.CString(key.Comm[:]))
		var user []uint64
		if o.User {
			if us, ok := ld.Stack(key.At.UserStack, &ubuf); ok {
				user = us.PCs
				res.Stacks.Add(ld.FileOf, key.At.Pid, us, n)
			}
		}
		locs := b.StackLocs(key.At.Pid, bpfmaps.Stack(m.Stacks, key.At.KernelStack, kbuf), user)
		b.SampleLocs(key.At.Pid, tid, locs, n)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the stack counts: %w", err)
	}
	meta := model.Meta{
		Event: strings.Join(o.Events, ","), Callchain: true, Arch: runtime.GOARCH, SondeVersion: o.Version,
		StartUnixNS: start.UnixNano(), DurationNS: uint64(elapsed.Nanoseconds()), Lost: res.Errors.MapFull,
		Unwinder: "bpf-tables",
	}
	var warn []string
	if res.Errors.StackFailures > 0 {
		warn = append(warn, fmt.Sprintf("%d kernel stack walks failed (stack map full or hash collisions)", res.Errors.StackFailures))
	}
	res.Profile = b.FinishLive(meta, o.Pid, o.User, &res.Stacks, warn...)
	res.Profile.TrimTracing()
	return res, nil
}
