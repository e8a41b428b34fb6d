// Package bpfskel is the one way sonde builds a BPF tool. A tool declares
// its object (bpf2go's loader), the options its C code reads as const
// volatile globals, its maps, and its hooks (attach points); the skeleton
// raises the locked-memory limit, picks each hook's attach mode by probing
// the kernel, loads only the chosen programs, attaches them, runs until
// the measurement is over (runctl) and closes everything on every path.
package bpfskel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// Tool declares a BPF tool.
type Tool struct {
	// Name is what the tool measures, for messages ("off-CPU analysis").
	Name string
	// Spec is bpf2go's loadX; nil where the object is not built for this
	// architecture (Open then says so in one line).
	Spec func() (*ebpf.CollectionSpec, error)
	// Consts set the object's const volatile globals before load.
	Consts map[string]any
	// Cgroup, when set, keeps the programs to that cgroup's tasks: the
	// object's target_cgroup and target_cgroup_ss (sonde_target.h).
	Cgroup *cgroup.Target
	// Maps, a pointer to bpfgen's <stem>Maps struct (or any struct of
	// *ebpf.Map fields, see AssignMaps), is filled after load; the maps
	// stay open until the session is closed.
	Maps any
	// More are further structs of maps to fill like Maps: those of a part
	// shared by tools (the unwinder's, unwind.Maps).
	More []any
	// Hooks are attached in order (put consumers before producers).
	Hooks []Hook
	// CommandHooks, with Command, are made once the held command's pid is
	// known and attached after Hooks: uprobes filtered to that pid by the
	// kernel, so no other process takes their traps.
	CommandHooks func(pid int) []Hook
	// Command, when set, is started held before its exec; its pid is set
	// in the PidConst global (when named), and it is released by Run once
	// everything is attached.
	Command  []string
	PidConst string
	// Features answers the attach-mode probes; nil is the running kernel.
	Features Features
	// Loaded, when set, runs once the maps are assigned and before any
	// hook is attached: it fills maps the programs need from their first
	// event (the unwinder's tables).
	Loaded func() error
	// Gate, when set, names a writable __u32 global of the object: the
	// skeleton sets it to 1 once every hook is attached (with Command: as
	// the command is released) and back to 0 before any is detached. Hooks are attached one by one (and a
	// multi-place link registers its places one by one), so a tool whose
	// programs only make sense together (a function's callers and callees,
	// entries and returns) has its programs do nothing outside the gate.
	Gate string
}

// cgroupConsts adds the -G cgroup to consts (a copy).
func cgroupConsts(t Tool, consts map[string]any) (map[string]any, error) {
	ss, err := cgroup.SubsysID(*t.Cgroup)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"target_cgroup": t.Cgroup.ID, "target_cgroup_ss": int32(ss)}
	for k, v := range consts {
		out[k] = v
	}
	return out, nil
}

// Session is a loaded and attached tool.
type Session struct {
	// Choices holds the mode picked for each hook, in Tool.Hooks order.
	Choices []Choice
	coll    *ebpf.Collection
	links   []io.Closer
	gate    *ebpf.Variable
	child   *runctl.Child
	rings   []*Ring
	// enabled is when the programs began to see every event: the last
	// hook attached, or the gate opened, or the held command released;
	// disabled when they stopped seeing every event (the gate closed, or
	// the first hook about to go). A run's duration is the span between
	// them: a function's entry probe without its return probe, or one
	// syscall's tracepoint without the others', sees part of the events,
	// and attaching or detaching a dozen probes takes 100–300 ms.
	enabled, disabled time.Time
	// commandOnly: the programs count the held command only (its pid is
	// their filter), so its exit ends what they can count.
	commandOnly bool
	// closing holds the links of a gated run still closing once Detach
	// returned; Close waits for them.
	closing sync.WaitGroup
}

// Open loads and attaches t. On error everything opened so far is closed
// (and a held command killed).
func Open(t Tool) (s *Session, err error) {
	if t.Spec == nil {
		return nil, fmt.Errorf("%s is not built for %s", t.Name, runtime.GOARCH)
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	WarmKernelTypes() // read while the spec is read, the command started and the modes probed
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising the locked-memory limit for BPF maps: %w", err)
	}
	spec, err := t.Spec()
	if err != nil {
		return nil, fmt.Errorf("reading the %s object: %w", t.Name, err)
	}
	s = &Session{}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	consts := t.Consts
	s.commandOnly = len(t.Command) > 0 && (t.PidConst != "" || t.CommandHooks != nil)
	if len(t.Command) > 0 {
		if s.child, err = runctl.StartChild(t.Command); err != nil {
			return s, err
		}
		if t.CommandHooks != nil {
			t.Hooks = append(t.Hooks[:len(t.Hooks):len(t.Hooks)], t.CommandHooks(s.child.Cmd.Process.Pid)...)
		}
		if t.PidConst != "" {
			consts = map[string]any{t.PidConst: uint32(s.child.Cmd.Process.Pid)}
			for k, v := range t.Consts {
				if k != t.PidConst {
					consts[k] = v
				}
			}
		}
	}
	if t.Cgroup != nil {
		if consts, err = cgroupConsts(t, consts); err != nil {
			return s, err
		}
	}
	for name, v := range consts {
		vs := spec.Variables[name]
		if vs == nil {
			return s, fmt.Errorf("setting %s of the %s object: no such global", name, t.Name)
		}
		if err := vs.Set(v); err != nil {
			return s, fmt.Errorf("setting %s of the %s object: %w", name, t.Name, err)
		}
	}
	f := t.Features
	if f == nil {
		f = Kernel
	}
	if s.Choices, err = plan(spec, t.Hooks, f); err != nil {
		return s, err
	}
	if s.coll, err = loadCollection(spec); err != nil {
		return s, loadError(t.Name, s.Choices, err)
	}
	if t.Maps != nil {
		if err := assign(spec, s.coll, t.Maps); err != nil {
			return s, fmt.Errorf("reading the %s maps: %w", t.Name, err)
		}
	}
	for _, m := range t.More {
		if err := assign(spec, s.coll, m); err != nil {
			return s, fmt.Errorf("reading the %s maps: %w", t.Name, err)
		}
	}
	if t.Loaded != nil {
		if err := t.Loaded(); err != nil {
			return s, err
		}
	}
	for _, c := range s.Choices {
		if err := s.attach(c); err != nil {
			return s, err
		}
	}
	if len(s.Choices) > 0 {
		s.enabled = time.Now()
	}
	if t.Gate != "" {
		if s.gate = s.coll.Variables[t.Gate]; s.gate == nil {
			return s, fmt.Errorf("opening the gate of the %s object: no global %s", t.Name, t.Gate)
		}
		if s.child == nil {
			return s, s.openGate()
		}
	}
	return s, nil
}

func (s *Session) openGate() error {
	if s.gate == nil {
		return nil
	}
	s.enabled = time.Now()
	if err := s.gate.Set(uint32(1)); err != nil {
		return fmt.Errorf("opening the gate of the BPF programs: %w", err)
	}
	return nil
}

// plan chooses a mode per hook and leaves in spec only the programs the
// choices use (a program of the fallback is never loaded, so it cannot
// fail, and a program of the preferred mode fails loudly). Kernel
// functions get a copy of their program per function, as fentry bakes the
// target into the program.
func plan(spec *ebpf.CollectionSpec, hooks []Hook, f Features) ([]Choice, error) {
	var out []Choice
	keep := map[string]bool{}
	for _, h := range hooks {
		c, err := choose(h, f)
		if err != nil {
			return nil, err
		}
		ps := spec.Programs[c.Prog]
		if ps == nil {
			return nil, fmt.Errorf("the object has no program %q for %s", c.Prog, h)
		}
		if c.Mode == Fentry {
			cp := ps.Copy()
			cp.AttachTo = h.event
			c.Prog = c.Prog + "/" + h.event
			spec.Programs[c.Prog] = cp
		}
		keep[c.Prog] = true
		out = append(out, c)
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	return out, nil
}

func (s *Session) attach(c Choice) error {
	p := s.coll.Programs[c.Prog]
	h := c.Hook
	var l link.Link
	var err error
	switch c.Mode {
	case TPBTF, Fentry:
		l, err = link.AttachTracing(link.TracingOptions{Program: p, Cookie: h.cookie})
	case RawTP:
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: h.event, Program: p})
	case Tracepoint:
		// cilium/ebpf reads the event id from tracefs; on a fresh boot it
		// may not be mounted yet (sonde mounts it, as perf does).
		if _, err := tracefs.Root(); err != nil {
			return fmt.Errorf("attaching %s: %w", h.event, err)
		}
		group, name, _ := strings.Cut(h.event, ":")
		l, err = link.Tracepoint(group, name, p, nil)
	case Kprobe:
		l, err = entryOrReturn(h.ret, link.Kprobe, link.Kretprobe)(h.event, p, &link.KprobeOptions{Cookie: h.cookie})
	case UprobeMulti:
		return s.attachMulti(p, c)
	case Uprobe:
		if h.kind == kindUprobeMulti {
			return s.attachMulti(p, c)
		}
		var ex *link.Executable
		if ex, err = link.OpenExecutable(h.binary); err != nil {
			return fmt.Errorf("opening %s: %w", h.binary, err)
		}
		o := &link.UprobeOptions{PID: h.pid, Cookie: h.cookie, Offset: h.offset}
		l, err = entryOrReturn(h.ret, ex.Uprobe, ex.Uretprobe)(h.event, p, o)
	case PerfEvent:
		return s.attachPerf(p, h)
	default:
		return fmt.Errorf("attaching %s: unknown mode %s", h, c.Mode)
	}
	if err != nil {
		what := "attaching to " + h.String()
		if h.ret {
			what = "attaching to the return of " + h.String()
		}
		return fmt.Errorf("%s (%s): %w", what, c.Mode, err)
	}
	s.links = append(s.links, l)
	return nil
}

// entryOrReturn picks the probe of a function's return for a return hook
// (kprobes and uprobes alike), else the probe of its entry.
func entryOrReturn[O any](ret bool, entry, exit func(string, *ebpf.Program, O) (link.Link, error)) func(string, *ebpf.Program, O) (link.Link, error) {
	if ret {
		return exit
	}
	return entry
}

type perfFD int

func (fd perfFD) Close() error { return unix.Close(int(fd)) }

func (s *Session) attachPerf(p *ebpf.Program, h Hook) error {
	fds, err := h.open()
	for _, fd := range fds {
		s.links = append(s.links, perfFD(fd))
	}
	if err != nil {
		return err
	}
	for _, fd := range fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, p.FD()); err != nil {
			return fmt.Errorf("attaching the BPF program to a perf event: %w", err)
		}
	}
	for _, fd := range fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fmt.Errorf("enabling a perf event: %w", err)
		}
	}
	return nil
}

// Program is the loaded program name (nil when no hook kept it), for a
// tool that attaches it itself.
func (s *Session) Program(name string) *ebpf.Program { return s.coll.Programs[name] }

// Variable is the object's global name (nil when it has none), for flags
// user space sets or clears while the programs run.
func (s *Session) Variable(name string) *ebpf.Variable { return s.coll.Variables[name] }

// Mode names the attach modes chosen, for verbose and JSON output:
// "tp_btf", "raw_tp", "uprobe", or several joined by "+".
func (s *Session) Mode() string {
	var ms []string
	for _, c := range s.Choices {
		m := string(c.Mode)
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return strings.Join(ms, "+")
}

// Pid is the held command's pid (0 without one).
func (s *Session) Pid() int {
	if s.child == nil {
		return 0
	}
	return s.child.Cmd.Process.Pid
}

// Run releases the held command, if any, and blocks until the run is over
// (o.Duration, a signal, ctx, the command's exit), calling o.OnInterval
// every o.Interval; then it detaches the programs, so the maps hold the
// final counts.
func (s *Session) Run(ctx context.Context, o runctl.Options) (runctl.Result, error) {
	if s.child != nil {
		c := s.child
		s.child = nil
		// The gate opens as the command is released: what the held child
		// did until now is sonde's, not the command's.
		if err := s.openGate(); err != nil {
			c.Abort()
			return runctl.Result{}, err
		}
		// The command does nothing of its own before this: its run is
		// what the programs count.
		s.enabled = time.Now()
		if err := c.Go(); err != nil {
			c.Abort()
			return runctl.Result{}, fmt.Errorf("releasing the command: %w", err)
		}
		o.Target = c.Cmd
	}
	if s.enabled.IsZero() {
		s.enabled = time.Now() // no hook (tests)
	}
	r, err := runctl.Run(ctx, o)
	s.Detach()
	// The programs are detached: what is left in the rings is the last of
	// their records, read before Run returns.
	s.stopRings()
	s.stopped() // a session without hooks (tests) stops here
	if s.commandOnly && r.Reason == runctl.Done && r.End.Before(s.disabled) {
		// The command exited (runctl saw it at r.End): nothing counted
		// after, however long the programs took to detach.
		s.disabled = r.End
	}
	r.Start, r.End = s.enabled, s.disabled
	r.Elapsed = r.End.Sub(r.Start)
	return r, err
}

// Started is when the programs began to count (the first hook attached,
// the gate opened or the held command released): the start of the run's
// first interval.
func (s *Session) Started() time.Time { return s.enabled }

// Stopped is when they stopped (zero while they run).
func (s *Session) Stopped() time.Time { return s.disabled }

// ReadRing reads the ring buffer m, calling fn with each record on the
// reader's goroutine, until Run (or Close) has detached the programs and
// fn has seen every record they wrote.
func (s *Session) ReadRing(m *ebpf.Map, fn func([]byte)) error {
	r, err := ReadRing(m, s.Variable("ring_reader_idle"), fn)
	if err != nil {
		return err
	}
	s.rings = append(s.rings, r)
	return nil
}

func (s *Session) stopRings() {
	for _, r := range s.rings {
		r.Stop()
	}
	s.rings = nil
}

// Detach stops the programs (links and perf events); maps stay readable.
// A gated run's programs stop at the gate: its links then close while the
// tool reads its maps and names its stacks (Close waits for them), and
// Detach returns once the first has closed.
func (s *Session) Detach() {
	gated := s.gate != nil
	if gated {
		// Closed first: no program starts anything once a hook is out.
		s.gate.Set(uint32(0))
		s.gate = nil
		s.stopped()
	}
	if len(s.links) > 0 {
		s.stopped() // the first link goes now
	}
	first := closeAll(s.links, &s.closing)
	s.links = nil
	if !gated {
		s.closing.Wait()
		return
	}
	// A link's close returns after an RCU grace period, and a program
	// runs inside one: once the first has closed, no program that passed
	// the gate before it shut is still running, and the rings hold all
	// they will get.
	<-first
}

// closeAll closes the links side by side on wg; first is closed once one
// has (at once when there are none). Closing a tracepoint's link waits
// for an RCU grace period in the kernel (15–45 ms each here), and the
// kernel does them one after the other: six links were 200 ms at the end
// of every syscount run, eight 260 ms at the end of memleak --kernel.
func closeAll(links []io.Closer, wg *sync.WaitGroup) (first chan struct{}) {
	first = make(chan struct{})
	var once sync.Once
	if len(links) == 0 {
		close(first)
	}
	for _, l := range links {
		wg.Go(func() {
			l.Close()
			once.Do(func() { close(first) })
		})
	}
	return first
}

// stopped notes when the programs stopped counting: the first of the
// gate closing and the last hook going.
func (s *Session) stopped() {
	if s.disabled.IsZero() && !s.enabled.IsZero() {
		s.disabled = time.Now()
	}
}

// Close detaches and frees everything; a command never released is killed.
func (s *Session) Close() {
	s.Detach()
	s.closing.Wait()
	s.stopRings()
	if s.child != nil {
		s.child.Abort()
		s.child = nil
	}
	if s.coll != nil {
		s.coll.Close()
		s.coll = nil
	}
}

// loadError says which program failed and why, in one line with the fix
// where there is one; a verifier error keeps its log (%+v prints it).
func loadError(name string, cs []Choice, err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		var modes []string
		for _, c := range cs {
			modes = append(modes, c.Prog+" ("+string(c.Mode)+")")
		}
		return fmt.Errorf("loading the %s programs: the kernel's verifier rejected one of %s: %w", name, strings.Join(modes, ", "), err)
	}
	if errors.Is(err, os.ErrPermission) {
		return permissionError("loading the "+name+" programs", err)
	}
	return fmt.Errorf("loading the %s programs: %w", name, err)
}

// LoadSpec reads a tool's embedded object; bpfgen's load<Stem> calls it.
func LoadSpec(name string, object []byte) (*ebpf.CollectionSpec, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, fmt.Errorf("reading the %s object: %w", name, err)
	}
	return spec, nil
}
