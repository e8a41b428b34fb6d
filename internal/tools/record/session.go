// Package record is the perf sampling run: events are opened with
// perf_event_open per CPU (system-wide, per command with inheritance, or
// per existing thread), their mmap rings are drained each round and the
// records handed to the builder in time order, so mappings are known
// before the samples that use them.
package record

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/host"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize/builder"
)

// Options configure one recording.
type Options struct {
	Events    []events.Spec
	Filters   map[int]string // event index → tracepoint filter
	Freq      uint64
	Period    uint64
	Callchain bool
	// CallGraph is how user stacks are taken with Callchain: CallGraphFP
	// (or "") the kernel's frame-pointer walk, CallGraphAuto sonde's BPF
	// unwinder, falling back to CallGraphFP (said in Result.CallGraphNote)
	// where it cannot run.
	CallGraph string
	All       bool
	Pids      []int
	Tids      []int
	CPUs      []int // nil: all online
	Command   []string
	Duration  time.Duration
	RingPages int
	// Output, when set, is the data file: written in chunks while the
	// recording runs (ChunkEvery), so memory stays flat and a recording
	// cut by SIGKILL, the OOM killer or a full disk reads back up to its
	// last chunk. Without it the whole profile is returned in memory.
	Output     string
	ChunkEvery time.Duration // default 100 ms
	// Ready, when set, is called once the events are open, just before
	// the recording starts (cli.Target.MeasureReady starts `-p PID
	// sleep N`'s command then).
	Ready func() error
	// Progress, when set, is called about once a second.
	Progress func(samples int, lost uint64, elapsed time.Duration)
	Version  string
}

// Result is a finished recording.
type Result struct {
	// Profile is the whole recording; with Options.Output its samples are
	// on disk only (Profile.Samples holds the last chunk's).
	Profile  *model.Profile
	Samples  int // samples recorded
	ExitCode int // the command's, when one ran
	// Old is where an existing file at Options.Output was moved.
	Old string
	// CallGraph is the mode that ran ("" without stacks), CallGraphNote
	// why auto fell back to fp.
	CallGraph, CallGraphNote string
	// Walk says how complete the walked user stacks are (auto only).
	Walk *WalkStats
}

type pending struct {
	time uint64
	typ  uint32
	misc uint16
	data []byte
	// A sample's user stack walked by the BPF unwinder (auto mode):
	// its key, and whether its record came.
	key    uint64
	walked bool
}

// Record runs a recording until the command exits, the duration passes or
// ctx is cancelled. Record installs no signal handler: the caller ends the
// run on SIGINT/SIGTERM by cancelling ctx (runctl.WithSignals).
func Record(ctx context.Context, o Options) (*Result, error) {
	if o.RingPages == 0 {
		o.RingPages = 128
	}
	if o.ChunkEvery <= 0 {
		o.ChunkEvery = 100 * time.Millisecond
	}

	cpus := o.CPUs
	if cpus == nil {
		var err error
		if cpus, err = perf.OnlineCPUs(); err != nil {
			return nil, err
		}
	}
	b := builder.New()
	if len(o.Events) == 0 {
		ev, _ := perf.ParseEvent("cpu-clock")
		o.Events = []events.Spec{{Event: ev}}
	}
	res := &Result{}
	var w *walker
	if o.Callchain {
		res.CallGraph = CallGraphFP
		if o.CallGraph == CallGraphAuto {
			pid := 0
			if len(o.Pids) == 1 && len(o.Command) == 0 {
				pid = o.Pids[0]
			}
			var err error
			if w, err = openWalker(pid, o.Events, !o.All); err != nil {
				// perf's fp mode needs no BPF: record still runs, and says so.
				res.CallGraphNote = "the BPF unwinder could not start: " + err.Error()
			} else {
				res.CallGraph = CallGraphAuto
				defer w.close()
			}
		}
	}
	raw := false
	var names []string
	for _, e := range o.Events {
		raw = raw || e.Tracepoint()
		names = append(names, e.String())
	}
	meta := model.Meta{
		Event: strings.Join(names, ","), Freq: o.Freq, Period: o.Period, Callchain: o.Callchain,
		Command: o.Command, SondeVersion: o.Version, Unwinder: b.Unwinder.Name(),
	}
	if w != nil {
		meta.Unwinder = UnwinderName
	}
	host.Fill(&meta)

	for i, e := range o.Events {
		info := model.EventInfo{Name: e.String(), Kind: e.Def.Kind.String(), Freq: o.Freq, Period: o.Period, Filter: o.Filters[i]}
		if e.Tracepoint() {
			// Tracepoints are recorded one sample per event unless -c says otherwise.
			info.Freq = 0
			if info.Period == 0 {
				info.Period = 1
			}
			for _, f := range e.Format.Fields {
				info.Fields = append(info.Fields, model.Field{Name: f.Name, Type: f.Type, Offset: int32(f.Offset), Size: int32(f.Size), Signed: f.Signed, Kind: uint8(f.Kind)})
			}
		}
		meta.Events = append(meta.Events, info)
	}
	if len(o.Events) > 1 || raw {
		meta.Freq, meta.Period = meta.Events[0].Freq, meta.Events[0].Period
	}
	// mkAttr builds event i's attributes; side-band records come from the
	// first event only, so each mmap and comm arrives once.
	mkAttr := func(i int, inherit, onExec bool) unix.PerfEventAttr {
		info := meta.Events[i]
		a := perf.NewAttr(perf.AttrOptions{
			Event: o.Events[i].Event, Freq: info.Freq, Period: info.Period, Callchain: o.Callchain,
			SideBand: i == 0, BuildID: true, Raw: raw, Inherit: inherit, EnableOnExec: onExec, Disabled: onExec,
		})
		if w != nil {
			// The kernel's chain stops at the user boundary: the walker
			// adds the user part.
			a.Bits |= unix.PerfBitExcludeCallchainUser
		}
		return a
	}
	idToEvent := map[uint64]uint16{}
	tpFD := map[int]int{}         // tracepoint event index → one of its fds
	rings := map[int]*perf.Ring{} // cpu → ring
	var fds []int
	cleanup := func() {
		for _, r := range rings {
			r.Close()
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	open := func(attr unix.PerfEventAttr, pid, cpu, ev int) error {
		fd, err := perf.Open(&attr, pid, cpu, -1, o.Events[ev].Event)
		if err != nil {
			return err
		}
		id, err := perf.ID(fd)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("reading event id: %w", err)
		}
		idToEvent[id] = uint16(ev)
		if _, ok := tpFD[ev]; !ok && o.Events[ev].Tracepoint() {
			tpFD[ev] = fd
		}
		if w != nil {
			if err := w.attach(fd, o.Events[ev]); err != nil {
				unix.Close(fd)
				return err
			}
		}
		if f := o.Filters[ev]; f != "" {
			if err := perf.SetFilter(fd, f); err != nil {
				unix.Close(fd)
				var fields []string
				if o.Events[ev].Format != nil {
					fields = o.Events[ev].Format.Names()
				}
				return fmt.Errorf("bad filter %q for %s: the kernel rejected it (fields: %s)", f, o.Events[ev], strings.Join(fields, ", "))
			}
		}
		if r, ok := rings[cpu]; ok {
			if err := perf.SetOutput(fd, r.FD); err != nil {
				unix.Close(fd)
				return fmt.Errorf("sharing ring on cpu %d: %w", cpu, err)
			}
			fds = append(fds, fd)
			return nil
		}
		r, err := perf.NewRing(fd, cpu, o.RingPages)
		if err != nil {
			unix.Close(fd)
			return err
		}
		rings[cpu] = r
		return nil
	}

	var child *runctl.Child
	switch {
	case len(o.Command) > 0 && !o.All:
		meta.Target = "command"
		var err error
		child, err = runctl.StartChild(o.Command)
		if err != nil {
			return nil, err
		}
		if w != nil {
			w.ld.FollowTree(child.Cmd.Process.Pid)
			w.preload(o.Command[0])
			if err := w.follow(child.Cmd.Process.Pid); err != nil {
				child.Abort()
				return nil, err
			}
		}
		for _, c := range cpus {
			for i := range o.Events {
				if err := open(mkAttr(i, true, true), child.Cmd.Process.Pid, c, i); err != nil {
					child.Abort()
					cleanup()
					return nil, err
				}
			}
		}
	case o.All:
		meta.Target = "system-wide"
		if o.CPUs != nil {
			meta.Target = "cpus " + cpuListString(cpus)
		}
		for _, c := range cpus {
			for i := range o.Events {
				if err := open(mkAttr(i, false, false), -1, c, i); err != nil {
					cleanup()
					return nil, err
				}
			}
		}
		pids, _ := procfs.Pids()
		for _, p := range pids {
			b.Synthesize(p)
		}
		if len(o.Command) > 0 {
			// perf's `-a -- CMD`: system-wide for as long as CMD runs.
			var err error
			if child, err = runctl.StartChild(o.Command); err != nil {
				cleanup()
				return nil, err
			}
		}
	case len(o.Pids) > 0 || len(o.Tids) > 0:
		type tgt struct{ pid, tid int }
		var targets []tgt
		for _, p := range o.Pids {
			tids, err := procfs.Threads(p)
			if err != nil {
				return nil, err
			}
			for _, t := range tids {
				targets = append(targets, tgt{p, t})
			}
			b.Synthesize(p)
		}
		for _, t := range o.Tids {
			p, err := procfs.TGID(t)
			if err != nil {
				return nil, err
			}
			targets = append(targets, tgt{p, t})
			b.Synthesize(p)
		}
		if len(o.Pids) > 0 {
			meta.Target = "pid " + joinInts(o.Pids)
		} else {
			meta.Target = "tid " + joinInts(o.Tids)
		}
		inherit := len(o.Pids) > 0 // follow threads and children they create
		for _, t := range targets {
			if w != nil {
				if err := w.follow(t.pid); err != nil {
					cleanup()
					return nil, err
				}
			}
			for _, c := range cpus {
				for i := range o.Events {
					if err := open(mkAttr(i, inherit, false), t.tid, c, i); err != nil {
						if strings.Contains(err.Error(), "no such process") {
							continue // the thread exited meanwhile
						}
						cleanup()
						return nil, err
					}
				}
			}
		}
		if len(rings) == 0 {
			return nil, fmt.Errorf("no such process: %s", meta.Target)
		}
	default:
		return nil, fmt.Errorf("nothing to record: give a command, -p PID, -t TID or -a")
	}
	defer cleanup()
	if w != nil {
		if err := w.outputs(rings); err != nil {
			if child != nil {
				child.Abort()
			}
			return nil, err
		}
	}

	var start time.Time
	var out *datafile.File
	if o.Output != "" {
		var err error
		if out, err = datafile.Create(o.Output); err != nil {
			if child != nil {
				child.Abort()
			}
			return nil, err
		}
		defer func() {
			if out != nil { // not finished: leave what was written, cut
				out.Abort()
			}
		}()
	}
	var writeErr error
	var kept time.Duration // how much of the recording complete chunks hold
	lastChunk := time.Now()
	chunk := func(now time.Time, lost uint64) {
		if out == nil || writeErr != nil || now.Sub(lastChunk) < o.ChunkEvery {
			return
		}
		lastChunk = now
		m := meta
		m.DurationNS, m.Lost = uint64(now.Sub(start).Nanoseconds()), lost
		if writeErr = out.Chunk(b.Partial(m)); writeErr == nil {
			b.DropSamples()
			kept = time.Duration(m.DurationNS)
		}
	}

	ringList := make([]*perf.Ring, 0, len(rings))
	for _, r := range rings {
		ringList = append(ringList, r)
	}
	sort.Slice(ringList, func(i, j int) bool { return ringList[i].CPU < ringList[j].CPU })

	// The recorder's own garbage is small and short-lived: collect rarely so
	// it stays off the CPUs it measures.
	gcPercent := debug.SetGCPercent(800)
	defer debug.SetGCPercent(gcPercent)
	// …but within a bound: samples go to disk as they come, so the live
	// heap is the tables, and garbage must not pile up 8× over them.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(32 << 20))
	if o.Ready != nil {
		if err := o.Ready(); err != nil {
			if child != nil {
				child.Abort()
			}
			return nil, err
		}
	}
	start = time.Now()
	meta.StartUnixNS = start.UnixNano()
	var childDone <-chan struct{}
	if child != nil {
		if err := child.Go(); err != nil {
			child.Abort()
			return nil, fmt.Errorf("starting command: %w", err)
		}
		childDone = child.Done()
	}
	var deadline <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		deadline = t.C
	}

	var queue []pending
	var sample perf.Sample
	lost := uint64(0)
	// Records are copied out of the rings into one arena per round; the few
	// that wait for a later round are copied again, so the hot path does not
	// allocate per record.
	var arena []byte
	drain := func() uint64 {
		// Everything stamped before this instant is already in a ring.
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		horizon := uint64(ts.Nano())
		arena = arena[:0]
		first := len(queue)
		for _, r := range ringList {
			r.Read(func(typ uint32, misc uint16, body []byte) {
				p := pending{time: perf.RecordTime(typ, body), typ: typ, misc: misc}
				if w != nil && typ == perf.RecordSample && w.take(r.CPU, body, &p) {
					return
				}
				off := len(arena)
				arena = append(arena, body...)
				p.data = arena[off:len(arena):len(arena)]
				queue = append(queue, p)
			})
		}
		// The arena may have moved while growing: re-slice this round's records.
		off := 0
		for i := first; i < len(queue); i++ {
			n := len(queue[i].data)
			queue[i].data = arena[off : off+n : off+n]
			off += n
		}
		return horizon
	}
	process := func(horizon uint64) {
		sort.SliceStable(queue, func(i, j int) bool { return queue[i].time < queue[j].time })
		n := 0
		for n < len(queue) && queue[n].time <= horizon {
			rec := queue[n]
			n++
			switch rec.typ {
			case perf.RecordSample:
				if perf.ParseSampleRaw(rec.data, o.Callchain, raw, &sample) == nil {
					if w != nil {
						w.user(&sample, rec.key, rec.walked)
					}
					b.SampleEvent(&sample, rec.misc, idToEvent[sample.ID])
				}
			case perf.RecordMmap, perf.RecordMmap2:
				if m, err := perf.ParseMmap(rec.typ, rec.misc, rec.data); err == nil {
					b.Mmap(m)
				}
			case perf.RecordComm:
				if c, err := perf.ParseComm(rec.misc, rec.data); err == nil {
					b.Comm(c)
				}
			case perf.RecordFork:
				if t, err := perf.ParseTask(rec.data); err == nil {
					b.Fork(t)
				}
			case perf.RecordLost, perf.RecordLostSamples:
				lost += perf.ParseLost(rec.typ, rec.data)
			case perf.RecordThrottle:
				meta.Throttled++
			}
		}
		if w != nil {
			w.round()
		}
		queue = append(queue[:0], queue[n:]...)
		for i := range queue {
			// Survivors outlive this round's arena.
			queue[i].data = append([]byte(nil), queue[i].data...)
		}
	}

	pfds := make([]unix.PollFd, len(ringList))
	for i, r := range ringList {
		pfds[i] = unix.PollFd{Fd: int32(r.FD), Events: unix.POLLIN}
	}
	lastProgress := time.Now()
	stopping := false
	var why runctl.Reason
	var end time.Time
	lastAlive := time.Now()
	for !stopping {
		select {
		case <-ctx.Done():
			stopping, why = true, runctl.Cancelled
		case <-childDone:
			stopping, why = true, runctl.Done
		case <-deadline:
			stopping, why = true, runctl.Deadline
		default:
		}
		if !stopping && len(o.Pids) > 0 && child == nil && time.Since(lastAlive) >= 250*time.Millisecond {
			// As perf does, -p ends when every target process has exited.
			lastAlive = time.Now()
			if !anyAlive(o.Pids) {
				stopping, why = true, runctl.Done
			}
		}
		if stopping {
			// The recording ends now, not when the command has gone.
			end = time.Now()
		}
		unix.Poll(pfds, 100)
		process(drain())
		now := time.Now()
		if o.Progress != nil && now.Sub(lastProgress) >= time.Second {
			o.Progress(b.SampleCount(), lost, now.Sub(start))
			lastProgress = now
		}
		chunk(now, lost)
		if writeErr != nil {
			break
		}
	}
	if end.IsZero() {
		end = time.Now()
	}
	for _, r := range ringList {
		perf.Disable(r.FD)
	}
	for ev, fd := range tpFD {
		mine := uint32(0)
		if w != nil {
			mine = w.programID(o.Events[ev])
		}
		if ids := foreignPrograms(fd, mine); len(ids) > 0 {
			meta.Warnings = append(meta.Warnings, fmt.Sprintf("%d other BPF program(s) (ids %v) are attached to %s: the kernel drops its samples whenever one of them returns 0 (bpftrace's do)", len(ids), ids, o.Events[ev]))
		}
	}
	exit := 0
	if child != nil {
		exit = child.End(why)
	}
	process(drain())
	process(^uint64(0))
	meta.DurationNS = uint64(end.Sub(start).Nanoseconds())
	meta.Lost = lost
	meta.ExitCode = exit
	if writeErr != nil && kept == 0 {
		out.Remove()
		out = nil
		return nil, fmt.Errorf("recording stopped: %w (nothing was kept)", writeErr)
	}
	if writeErr != nil {
		// What was written reads back as a cut recording.
		return nil, fmt.Errorf("recording stopped: %w (%s keeps the first %s)", writeErr, o.Output, kept.Round(time.Millisecond))
	}
	res.Samples, res.ExitCode = b.SampleCount(), exit
	if w != nil {
		res.Walk = w.finish()
		meta.UserStacks = &res.Walk.Stacks // report says it too
	}
	if res.CallGraphNote != "" {
		meta.Warnings = append(meta.Warnings, "call graph: frame pointers, "+res.CallGraphNote)
	}
	// Naming opens every object once, line tables and all: garbage from
	// one object must be collected before the next is read.
	debug.SetGCPercent(gcPercent)
	res.Profile = b.Finish(meta)
	if out != nil {
		// The pass named every location: the last chunk carries the named
		// tables whole, replacing the recorded addresses before it.
		out.Rewrite()
		err := out.Finish(res.Profile)
		res.Old = out.Old
		out = nil
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// anyAlive reports whether any of pids still runs (a zombie does not).
func anyAlive(pids []int) bool {
	for _, p := range pids {
		if procfs.CheckPid(p) == nil {
			return true
		}
	}
	return false
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

func cpuListString(v []int) string { return joinInts(v) }
