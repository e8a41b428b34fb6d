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

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/host"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
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
	// Cgroup (with All): only the tasks of this cgroup and its descendants.
	Cgroup    *cgroup.Target
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
	// NoInterp leaves interpreter frames (CPython) out of user stacks.
	NoInterp bool
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

// Record runs a recording until the command exits, the duration passes or
// ctx is cancelled. Record installs no signal handler: the caller ends the
// run on SIGINT/SIGTERM by cancelling ctx (runctl.WithSignals).
func Record(ctx context.Context, o Options) (*Result, error) {
	s := newSession(o)
	// Every return, an error at any step included, goes through close: it
	// undoes whatever the steps before had opened.
	defer s.close()
	if err := s.setup(); err != nil {
		return nil, err
	}
	if err := s.openTarget(); err != nil {
		return nil, err
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := s.begin(); err != nil {
		return nil, err
	}
	runctl.Ready()
	s.run(ctx)
	s.stop()
	return s.finish()
}

// session is one recording: what it opened (close undoes it) and the
// state its rounds share.
type session struct {
	o    Options
	cpus []int
	b    *builder.Builder
	res  *Result
	w    *walker // nil: no BPF unwinder (fp or no stacks)
	raw  bool    // a tracepoint is recorded: samples carry raw data
	meta model.Meta

	idToEvent map[uint64]uint16
	tpFD      map[int]int        // tracepoint event index → one of its fds
	rings     map[int]*perf.Ring // cpu → ring
	fds       []int              // events writing into another event's ring
	ringList  []*perf.Ring       // rings, by CPU: the order they are drained in
	cgroupFD  int                // -G: the cgroup's directory while events open

	child *runctl.Child
	// released: child.Go let the command run, so End, not Abort, ends it.
	released  bool
	childDone <-chan struct{}

	out    *datafile.File // nil: the profile is kept in memory
	chunks *chunker

	// The GC settings begin found (gcSet: changed), for close to put back.
	gcSet     bool
	gcPercent int
	memLimit  int64

	deadline time.Time // when the duration ends (zero: no duration)

	// began: the events were enabled (or the command released to exec,
	// which enables them); end: they were disabled. The recording's
	// duration is the span between.
	began, end time.Time
	why        runctl.Reason
	exit       int

	// onExec: the events are enabled at the command's exec (enable_on_exec),
	// not by enable.
	onExec bool

	ord    orderer
	sample perf.Sample // reused by every sample
	lost   uint64
}

// newSession fills o's defaults.
func newSession(o Options) *session {
	if o.RingPages == 0 {
		o.RingPages = 128
	}
	if o.ChunkEvery <= 0 {
		o.ChunkEvery = 100 * time.Millisecond
	}
	if len(o.Events) == 0 {
		ev, _ := perf.ParseEvent("cpu-clock")
		o.Events = []events.Spec{{Event: ev}}
	}
	b := builder.New()
	b.HoldFiles()                        // containers' and temporary binaries, named after they exit
	b.CgroupsFrom(func(pid int) string { // report --sort cgroup
		p, _ := cgroup.PathOf(pid)
		return p
	})
	return &session{o: o, b: b, res: &Result{},
		idToEvent: map[uint64]uint16{}, tpFD: map[int]int{}, rings: map[int]*perf.Ring{}}
}

// close undoes what the session opened. A command never released is
// killed first (it must not run unrecorded; a released one was ended by
// stop); the GC settings are put back; an output file not finished is
// left as written (it reads back as cut); then the events go, and the
// walker last, since it wants its events closed first.
func (s *session) close() {
	defer symbolize.ReleaseHeld() // the frames are named (or never will be)
	if s.child != nil && !s.released {
		s.child.Abort()
	}
	s.child = nil
	if s.gcSet {
		debug.SetMemoryLimit(s.memLimit)
		debug.SetGCPercent(s.gcPercent)
		s.gcSet = false
	}
	if s.out != nil {
		s.out.Abort()
		s.out = nil
	}
	s.closeEvents()
}

// closeEvents closes the rings, the events and the walker: the naming at
// the end needs none of them, and the walker's tables and caches are
// better collected before it starts.
func (s *session) closeEvents() {
	for _, r := range s.rings {
		r.Close()
	}
	for _, fd := range s.fds {
		unix.Close(fd)
	}
	s.rings, s.fds, s.ringList = nil, nil, nil
	if s.w != nil {
		s.w.close()
		s.w = nil
	}
}

// setup finds the CPUs, starts the BPF unwinder if asked and writes the
// recording's metadata.
func (s *session) setup() error {
	s.cpus = s.o.CPUs
	if s.cpus == nil {
		var err error
		if s.cpus, err = perf.OnlineCPUs(); err != nil {
			return err
		}
	}
	s.startWalker()
	s.buildMeta()
	return nil
}

// startWalker opens the BPF unwinder for --call-graph auto.
func (s *session) startWalker() {
	o := s.o
	if !o.Callchain {
		return
	}
	s.res.CallGraph = CallGraphFP
	if o.CallGraph != CallGraphAuto {
		return
	}
	pid := 0
	if len(o.Pids) == 1 && len(o.Command) == 0 {
		pid = o.Pids[0]
	}
	w, err := openWalker(pid, o.Events, !o.All, o.NoInterp)
	if err != nil {
		// perf's fp mode needs no BPF: record still runs, and says so.
		s.res.CallGraphNote = "the BPF unwinder could not start: " + err.Error()
		return
	}
	s.res.CallGraph, s.w = CallGraphAuto, w
	s.b.Python = w.ld.PythonNames() // named as the stacks arrive
}

// buildMeta describes the recording and each of its events.
func (s *session) buildMeta() {
	o := s.o
	var names []string
	for _, e := range o.Events {
		s.raw = s.raw || e.Tracepoint()
		names = append(names, e.String())
	}
	meta := model.Meta{
		Event: strings.Join(names, ","), Freq: o.Freq, Period: o.Period, Callchain: o.Callchain,
		Command: o.Command, SondeVersion: o.Version, Unwinder: s.b.Unwinder.Name(),
	}
	if s.w != nil {
		meta.Unwinder = UnwinderName
	}
	host.Fill(&meta)
	for i, e := range o.Events {
		meta.Events = append(meta.Events, eventInfo(o, i, e))
	}
	if len(o.Events) > 1 || s.raw {
		meta.Freq, meta.Period = meta.Events[0].Freq, meta.Events[0].Period
	}
	s.meta = meta
}

// eventInfo describes event i of o.
func eventInfo(o Options, i int, e events.Spec) model.EventInfo {
	info := model.EventInfo{Name: e.String(), Kind: e.Def.Kind.String(), Freq: o.Freq, Period: o.Period, Filter: o.Filters[i]}
	if !e.Tracepoint() {
		return info
	}
	// Tracepoints are recorded one sample per event unless -c says otherwise.
	info.Freq = 0
	if info.Period == 0 {
		info.Period = 1
	}
	for _, f := range e.Format.Fields {
		info.Fields = append(info.Fields, model.Field{Name: f.Name, Type: f.Type, Offset: int32(f.Offset), Size: int32(f.Size), Signed: f.Signed, Kind: uint8(f.Kind)})
	}
	return info
}

// prepare readies what the rounds need once the events are open: the
// walker's outputs into the rings, the output file and the drain order.
func (s *session) prepare() error {
	if s.w != nil {
		if err := s.w.outputs(s.rings); err != nil {
			return err
		}
	}
	var cw chunkWriter // stays a nil interface without a file
	if s.o.Output != "" {
		out, err := datafile.Create(s.o.Output)
		if err != nil {
			return err
		}
		s.out, cw = out, out
	}
	s.chunks = newChunker(cw, s.o.ChunkEvery, time.Now())
	s.ringList = make([]*perf.Ring, 0, len(s.rings))
	for _, r := range s.rings {
		s.ringList = append(s.ringList, r)
	}
	sort.Slice(s.ringList, func(i, j int) bool { return s.ringList[i].CPU < s.ringList[j].CPU })
	return nil
}

// begin starts the recording: Ready, then the clock, then the command.
func (s *session) begin() error {
	// The recorder's own garbage is small and short-lived: collect rarely so
	// it stays off the CPUs it measures…
	s.gcPercent = debug.SetGCPercent(800)
	// …but within a bound: samples go to disk as they come, so the live
	// heap is the tables, and garbage must not pile up 8× over them.
	s.memLimit = debug.SetMemoryLimit(32 << 20)
	s.gcSet = true
	// The recording starts as the first event is enabled: the duration
	// counts from here, and it is the span the file says it holds.
	s.began = time.Now()
	s.meta.StartUnixNS = s.began.UnixNano()
	if s.o.Duration > 0 {
		s.deadline = s.began.Add(s.o.Duration)
	}
	if err := s.enable(); err != nil {
		return err
	}
	if s.o.Ready != nil {
		if err := s.o.Ready(); err != nil {
			return err
		}
	}
	if s.child != nil {
		if err := s.child.Go(); err != nil {
			return fmt.Errorf("starting command: %w", err)
		}
		s.released = true
		s.childDone = s.child.Done()
	}
	return nil
}

// enable starts every event not waiting for the command's exec: all of
// them exist by now, with the walker's program attached and its outputs
// in place, so every sample carries its walked stack from the first.
func (s *session) enable() error {
	if s.onExec {
		return nil
	}
	for _, r := range s.ringList {
		if err := perf.Enable(r.FD); err != nil {
			return fmt.Errorf("enabling the events on cpu %d: %w", r.CPU, err)
		}
	}
	for _, fd := range s.fds {
		if err := perf.Enable(fd); err != nil {
			return fmt.Errorf("enabling the events: %w", err)
		}
	}
	return nil
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
