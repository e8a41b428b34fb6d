package ftrace

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/funcexit"
	"github.com/sonde-dev/sonde/internal/collect/host"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
)

// Options configure a recording.
type Options struct {
	Command     []string // run this (held until the probes are in)
	Pid         int      // or attach to this process
	Include     []string // -F patterns
	Exclude     []string // -N patterns
	Depth       int      // -D: calls deeper than this are not recorded (0: all)
	MinDuration time.Duration
	Args, Rets  []string // -A FUNC@ARGS, -R FUNC@retval
	Duration    time.Duration
	Output      string
	Mechanism   string // "auto", "uprobe" or "preload"
	Version     string
	Log         io.Writer // one line of what runs, and the summary
}

// Summary says what a recording holds.
type Summary struct {
	Calls, Threads, Funcs int
	Mechanism             string
	Lost, Unmatched       uint64
	Filtered              uint64
	Elapsed               time.Duration
	ExitCode              int
}

// Binary is the program a recording traces: the command's executable or
// the process's.
func (o *Options) Binary() (string, error) {
	if o.Pid > 0 {
		return probe.ExecOf(o.Pid)
	}
	if len(o.Command) == 0 {
		return "", fmt.Errorf("give a command (-- CMD ARGS) or a process (-p PID)")
	}
	p, err := exec.LookPath(o.Command[0])
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", o.Command[0], err)
	}
	return filepath.Abs(p)
}

func (o *Options) filter() string {
	var f []string
	if o.Depth > 0 {
		f = append(f, fmt.Sprintf("depth<%d", o.Depth))
	}
	if o.MinDuration > 0 {
		f = append(f, "duration>="+o.MinDuration.String())
	}
	return strings.Join(f, " ")
}

// Record traces the calls of the selected functions into o.Output.
func Record(ctx context.Context, o Options) (*Summary, error) {
	bin, err := o.Binary()
	if err != nil {
		return nil, err
	}
	fs, err := Resolve(bin, o.Pid, o.Include, o.Exclude)
	if err != nil {
		return nil, err
	}
	if err := SetCaptures(fs, o.Args, o.Rets); err != nil {
		return nil, err
	}
	inproc := len(o.Command) > 0 && len(o.Args) == 0 && len(o.Rets) == 0 && Instrumented(bin) != ""
	switch o.Mechanism {
	case "", "auto":
	case "uprobe":
		inproc = false
	case "preload":
		if !inproc {
			return nil, fmt.Errorf("the in-process recorder needs a command (not -p) built with -finstrument-functions (or -pg on amd64), and no -A/-R")
		}
	default:
		return nil, fmt.Errorf("mechanism %q: want auto, uprobe or preload", o.Mechanism)
	}
	if inproc {
		return recordPreload(ctx, o, bin, fs)
	}
	return recordUprobes(ctx, o, fs)
}

// hooks are the attach points of fs: per object, one multi-place hook for
// entries and one for returns (uretprobes in native code, the return
// instructions in Go).
func hooks(fs []Func, pid int) ([]bpfskel.Hook, error) {
	type places struct {
		syms    []string
		offs    []uint64
		cookies []uint64
	}
	type key struct {
		bin  string
		kind int // 0 entry, 1 uretprobe, 2 Go entry, 3 Go return instruction
	}
	all := map[key]*places{}
	var order []key
	add := func(k key, sym string, off uint64, cookie int) {
		p := all[k]
		if p == nil {
			p = &places{}
			all[k] = p
			order = append(order, k)
		}
		p.syms = append(p.syms, sym)
		p.offs = append(p.offs, off)
		p.cookies = append(p.cookies, uint64(cookie))
	}
	elfs := map[string]*elf.File{}
	defer func() {
		for _, f := range elfs {
			f.Close()
		}
	}()
	for i, f := range fs {
		for _, sym := range f.Syms {
			if !f.Go {
				add(key{f.Binary, 0}, sym, 0, i)
				add(key{f.Binary, 1}, sym, 0, i)
				continue
			}
			ef := elfs[f.Binary]
			if ef == nil {
				var err error
				if ef, err = elf.Open(f.Binary); err != nil {
					return nil, fmt.Errorf("opening %s: %w", f.Binary, err)
				}
				elfs[f.Binary] = ef
			}
			rets, err := funcexit.Returns(ef, sym)
			if err != nil {
				return nil, fmt.Errorf("%s is Go, where return probes would crash it; sonde probes its return instructions instead, but: %w", sym, err)
			}
			add(key{f.Binary, 2}, sym, 0, i)
			for _, off := range rets {
				add(key{f.Binary, 3}, sym, off, i)
			}
		}
	}
	progs := [][2]string{
		{ftraceProgMultiEntry, ftraceProgUprobeEntry}, {ftraceProgMultiReturn, ftraceProgUprobeReturn},
		{ftraceProgMultiGoEntry, ftraceProgUprobeGoEntry}, {ftraceProgMultiGoReturn, ftraceProgUprobeGoReturn},
	}
	var hs []bpfskel.Hook
	// Returns first: a call is never entered without its return probed.
	for _, pass := range []int{1, 3, 0, 2} {
		for _, k := range order {
			if k.kind != pass {
				continue
			}
			p := all[k]
			hs = append(hs, bpfskel.UprobeMultiHook(k.bin, p.syms, p.offs, p.cookies, progs[k.kind][0], progs[k.kind][1], k.kind == 1, pid))
		}
	}
	return hs, nil
}

// counts are the program's counters (each tag names its member of enum
// ftrace_counter, bpfskel.Counters).
type counts struct {
	Lost      uint64 `counter:"FTRACE_C_LOST"`
	Overflow  uint64 `counter:"FTRACE_C_OVERFLOW"`
	Unmatched uint64 `counter:"FTRACE_C_UNMATCHED"`
	NoStack   uint64 `counter:"FTRACE_C_NOSTACK"`
	Filtered  uint64 `counter:"FTRACE_C_FILTERED"`
}

// sink collects calls into the data file, a chunk at a time.
type sink struct {
	mu      sync.Mutex
	p       *model.Profile
	f       *datafile.File
	threads map[uint64]int32
	calls   int
	err     error
	// comm names a thread gone from /proc by the time its first call is
	// read ("" when it cannot): what the mechanism saw of it.
	comm func(key uint64, pid, tid uint32) string
}

func newSink(path string, p *model.Profile) (*sink, error) {
	f, err := datafile.Create(path)
	if err != nil {
		return nil, err
	}
	return &sink{p: p, f: f, threads: map[uint64]int32{}}, nil
}

// thread is the index of the thread (or goroutine) key, added on first sight.
func (s *sink) thread(key uint64, pid, tid uint32) int32 {
	if i, ok := s.threads[key]; ok {
		return i
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if len(comm) == 0 && s.comm != nil {
		comm = []byte(s.comm(key, pid, tid))
	}
	if len(comm) == 0 {
		comm, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	}
	i := int32(len(s.p.Threads))
	s.p.Threads = append(s.p.Threads, model.Thread{Pid: int32(pid), Tid: int32(tid), Comm: strings.TrimSpace(string(comm))})
	s.threads[key] = i
	return i
}

func (s *sink) add(key uint64, pid, tid uint32, c *Call) {
	s.mu.Lock()
	c.Thread = s.thread(key, pid, tid)
	s.p.Samples = append(s.p.Samples, c.Sample())
	s.calls++
	s.mu.Unlock()
}

// flush writes the calls so far as one chunk.
func (s *sink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = s.f.Chunk(s.p)
	}
	s.p.Samples = s.p.Samples[:0]
	return s.err
}

// close fills in how the recording ended (length, exit status, losses)
// and writes the last chunk.
func (s *sink) close(sum *Summary, overflow uint64, stackDepth int) (*Summary, error) {
	m := &s.p.Meta
	m.Lost, m.DurationNS, m.ExitCode = sum.Lost, uint64(sum.Elapsed), sum.ExitCode
	if overflow > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d calls deeper than %d levels were not timed", overflow, stackDepth))
	}
	if sum.Lost > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d calls lost: the ring was full (trace fewer functions: -F/-N, -D, -t)", sum.Lost))
	}
	sum.Calls, sum.Threads = s.calls, len(s.p.Threads)
	if err := s.finish(); err != nil {
		return nil, err
	}
	return sum, nil
}

func (s *sink) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		s.f.Abort()
		return s.err
	}
	return s.f.Finish(s.p)
}

func recordUprobes(ctx context.Context, o Options, fs []Func) (*Summary, error) {
	hs, err := hooks(fs, o.Pid)
	if err != nil {
		return nil, err
	}
	var maps ftraceMaps
	tool := bpfskel.Tool{
		Name: "function-graph tracing",
		Spec: func() (*ebpf.CollectionSpec, error) {
			s, err := loadFtrace()
			if err == nil {
				s.Maps["fncfg"].MaxEntries = uint32(len(fs))
			}
			return s, err
		},
		Maps: &maps, Hooks: hs, Gate: ftraceVarArmed,
		Consts: map[string]any{ftraceVarTargetPid: uint32(o.Pid), ftraceVarMaxDepth: uint32(o.Depth),
			ftraceVarMinDuration: uint64(o.MinDuration.Nanoseconds())},
		Loaded: func() error { return fillConfig(maps.Fncfg, fs) },
	}
	if len(o.Command) > 0 {
		tool.Command, tool.PidConst = o.Command, ftraceVarTargetPid
	}
	s, err := bpfskel.Open(tool)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	mech := s.Mode()
	if fs[0].Go {
		mech += " (Go: return instructions, no uretprobes)"
	}
	fmt.Fprintf(o.Log, "sonde: tracing %d functions of %s with %s\n", len(fs), filepath.Base(fs[0].Binary), mech)
	p := NewProfile(fs, s.Mode(), o.filter())
	p.Meta.Command, p.Meta.SondeVersion, p.Meta.StartUnixNS = o.Command, o.Version, time.Now().UnixNano()
	p.Meta.Target = "command"
	if o.Pid > 0 {
		p.Meta.Target = fmt.Sprintf("pid %d", o.Pid)
	}
	host.Fill(&p.Meta)
	sk, err := newSink(o.Output, p)
	if err != nil {
		return nil, err
	}
	sk.comm = func(key uint64, _, _ uint32) string {
		var sh ftraceFtraceShadow
		if maps.Shadows.Lookup(key, &sh) != nil {
			return ""
		}
		return bpfmaps.CString(sh.Comm[:])
	}
	err = s.ReadRing(maps.Events, func(raw []byte) {
		e := bpfskel.View[ftraceFtraceEvent](raw)
		if e == nil || int(e.Fn) >= len(fs) {
			return
		}
		c := Call{Fn: int32(e.Fn), Start: e.StartNs, Dur: e.DurationNs, Depth: int(e.Depth), HasRet: e.Flags&1 != 0, Ret: e.Retval}
		if e.Nargs > 0 {
			c.Args = append([]uint64(nil), e.Args[:min(int(e.Nargs), len(e.Args))]...)
		}
		sk.add(e.Key, e.Pid, e.Tid, &c)
	})
	if err != nil {
		sk.f.Abort()
		return nil, err
	}
	ro := runctl.Options{Duration: o.Duration, Interval: time.Second, OnInterval: sk.flush}
	if o.Pid > 0 {
		ro.Done = watchPid(ctx, o.Pid)
	}
	run, err := s.Run(ctx, ro)
	if err != nil {
		sk.f.Abort()
		return nil, err
	}
	unfinished(maps.Shadows, sk, o.Depth)
	var c counts
	if err := maps.Counters.Read(&c); err != nil {
		sk.f.Abort()
		return nil, err
	}
	sum := &Summary{Funcs: len(fs), Mechanism: mech, Elapsed: run.Elapsed, ExitCode: run.ExitCode,
		Lost: c.Lost, Unmatched: c.Unmatched, Filtered: c.Filtered}
	if c.NoStack > 0 {
		p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%d calls of threads beyond the first 1024 were not traced", c.NoStack))
	}
	return sk.close(sum, c.Overflow, 64)
}

// fillConfig tells the programs which arguments and return values to read.
func fillConfig(m *ebpf.Map, fs []Func) error {
	for i, f := range fs {
		if len(f.Args) == 0 && !f.Ret {
			continue
		}
		n := 0
		for _, a := range f.Args {
			n = max(n, a+1)
		}
		c := ftraceFtraceFncfg{Nargs: uint8(n)}
		if f.Ret {
			c.WantRet = 1
		}
		if err := m.Put(uint32(i), &c); err != nil {
			return fmt.Errorf("configuring %s's arguments: %w", f.Name, err)
		}
	}
	return nil
}

// unfinished adds the calls still on the shadow stacks when the probes
// came out (main, when attached with -p), timed up to now.
func unfinished(m *ebpf.Map, sk *sink, maxDepth int) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	now := uint64(ts.Nano())
	var key uint64
	var sh ftraceFtraceShadow
	it := m.Iterate()
	for it.Next(&key, &sh) {
		for d := 0; d < int(min(sh.Depth, uint32(len(sh.Frames)))) && (maxDepth == 0 || d < maxDepth); d++ {
			f := &sh.Frames[d]
			if f.StartNs == 0 || f.StartNs > now {
				continue
			}
			c := Call{Fn: int32(f.Fn), Start: f.StartNs, Dur: now - f.StartNs, Depth: d, Unfinished: true}
			sk.add(key, sh.Pid, sh.Tid, &c)
		}
	}
}

// watchPid is closed when pid exits.
func watchPid(ctx context.Context, pid int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return done
}
