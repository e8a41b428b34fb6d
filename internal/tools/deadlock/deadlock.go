// Package deadlock finds lock-order inversions (potential deadlocks) in
// running programs, as ThreadSanitizer's deadlock detector does but
// without rebuilding them: uprobes on the pthread mutex and rwlock
// functions keep, in BPF, the locks each thread holds and an edge per
// ordered pair of locks (held → acquired) with the stacks where each was
// taken; user space finds the cycles of that graph (FindCycles) and
// reports each with its locks, threads and stacks.
package deadlock

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/collect/unwind"
)

// Options configure a run.
type Options struct {
	Pid      int      // trace this process (0: every process, or Command)
	Command  []string // run and trace this command
	Lib      string   // the library or binary with the pthread functions ("": libc.so.6)
	Duration time.Duration
}

// Counters are the program's counts of what it saw and what it dropped
// (each tag names its member of enum dl_counter, bpfskel.Counters).
type Counters struct {
	Acquisitions    uint64 `json:"acquisitions" counter:"DL_C_ACQUIRE"`
	Releases        uint64 `json:"releases" counter:"DL_C_RELEASE"`
	TryFailed       uint64 `json:"try_failed" counter:"DL_C_TRY_FAILED"`
	Recursive       uint64 `json:"recursive" counter:"DL_C_RECURSIVE"`
	UnknownReleases uint64 `json:"unknown_releases" counter:"DL_C_UNKNOWN_RELEASE"`
	EdgesFull       uint64 `json:"lost_map_full" counter:"DL_C_EDGES_FULL"`
	HeldFull        uint64 `json:"too_many_held" counter:"DL_C_HELD_FULL"`
	ThreadsFull     uint64 `json:"threads_map_full" counter:"DL_C_THREADS_FULL"`
	StackFailed     uint64 `json:"stack_failures" counter:"DL_C_STACK_FAILED"`
	StacksReused    uint64 `json:"stacks_reused" counter:"DL_C_STACK_REUSED"`
}

// Dropped is everything lost: edges or acquisitions the graph misses.
func (c Counters) Dropped() uint64 { return c.EdgesFull + c.HeldFull + c.ThreadsFull }

// Frame is one symbolized stack frame.
type Frame struct {
	Sym  string `json:"sym"`
	DSO  string `json:"dso"`
	Addr uint64 `json:"addr"`
}

// LockID is a lock: an address in one process.
type LockID struct {
	Pid  uint32
	Addr uint64
}

// Result of a run: the graph, with its stacks and lock names resolved.
type Result struct {
	Edges    []Edge
	Counters Counters
	Stacks   map[uint64][]Frame // by stack key
	Names    map[LockID]string  // global or static variables, by lock
	Lib      string             // where the probes are
	Fallback string             // why each function has its own uprobe, not one uprobe_multi link ("": it has)
	Elapsed  time.Duration
	ExitCode int      // the command's, when one ran
	Command  []string // the command run, if any
}

// probe is one hooked function.
type probe struct {
	sym  string
	kind deadlockDlKind // which program branch serves it
	mode Mode
}

// cookie tells the entry program the function's kind and mode.
func (p probe) cookie() uint64 {
	return uint64(p.kind)<<deadlockDlKindDL_KIND_SHIFT | uint64(p.mode)
}

// probes are glibc's lock functions. Blocking calls are taken at entry;
// try-locks at entry and return (the return value says whether they took
// the lock). Unlocks come first: the kernel places a link's probes in
// order, so no lock is seen taken whose release would be missed.
var probes = []probe{
	{"pthread_mutex_unlock", deadlockDlKindDL_UNLOCK, Mutex},
	{"pthread_rwlock_unlock", deadlockDlKindDL_UNLOCK, Mutex},
	{"pthread_mutex_trylock", deadlockDlKindDL_TRYLOCK, Mutex},
	{"pthread_rwlock_tryrdlock", deadlockDlKindDL_TRYLOCK, Read},
	{"pthread_rwlock_trywrlock", deadlockDlKindDL_TRYLOCK, Write},
	{"pthread_mutex_lock", deadlockDlKindDL_LOCK, Mutex},
	{"pthread_rwlock_rdlock", deadlockDlKindDL_LOCK, Read},
	{"pthread_rwlock_wrlock", deadlockDlKindDL_LOCK, Write},
}

// hooks are two links: one program on every entry and one on the
// try-locks' returns (attached first, so no try-lock is entered without
// its return probed), the cookie telling the functions apart. A link per
// function took the kernel 80-95 ms each to remove at exit; kernels
// without uprobe_multi still get a uprobe per place (bpfskel).
func hooks(lib string, have map[string]bool, pid int) []bpfskel.Hook {
	var syms, rets []string
	var cookies, retCookies []uint64
	for _, p := range probes {
		if !have[p.sym] {
			continue
		}
		syms, cookies = append(syms, p.sym), append(cookies, p.cookie())
		if p.kind == deadlockDlKindDL_TRYLOCK {
			rets, retCookies = append(rets, p.sym), append(retCookies, p.cookie())
		}
	}
	hs := []bpfskel.Hook{bpfskel.BTFTracepoint("sched_process_exit", deadlockProgTpBtfDeadlockExit, deadlockProgRawDeadlockExit)}
	if len(rets) > 0 {
		hs = append(hs, bpfskel.UprobeMultiHook(lib, rets, make([]uint64, len(rets)), retCookies,
			deadlockProgMultiTrylockReturn, deadlockProgUprobeTrylockReturn, true, pid))
	}
	return append(hs, bpfskel.UprobeMultiHook(lib, syms, make([]uint64, len(syms)), cookies,
		deadlockProgMultiLockEntry, deadlockProgUprobeLockEntry, false, pid))
}

// required are the functions without which there is nothing to trace.
var required = []string{"pthread_mutex_lock", "pthread_mutex_unlock"}

// Run traces until the duration passes, ctx ends, a signal arrives or the
// command exits, then reads the graph.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Pid != 0 && len(o.Command) > 0 {
		return nil, errors.New("trace a process or a command, not both")
	}
	var child *runctl.Child
	pid := o.Pid
	if len(o.Command) > 0 {
		// Held before its exec, so the probes can be limited to it
		// (other processes using libc never trap).
		var err error
		if child, err = runctl.StartChild(o.Command); err != nil {
			return nil, err
		}
		pid = child.Cmd.Process.Pid
		defer func() {
			if child != nil {
				child.Abort()
			}
		}()
	}
	lib, err := findLib(o.Lib, o.Pid)
	if err != nil {
		return nil, err
	}
	have, err := functions(lib)
	if err != nil {
		return nil, err
	}
	for _, r := range required {
		if !have[r] {
			return nil, fmt.Errorf("%s has no %s: give the library or binary that has the pthread functions with --lib", lib, r)
		}
	}
	var maps deadlockMaps
	t := bpfskel.Tool{
		Name: "lock-order tracing", Spec: loadDeadlock, Maps: &maps, Hooks: hooks(lib, have, pid),
		Consts: map[string]any{deadlockVarTargetPid: uint32(pid)},
	}
	// A held command is still sonde's image: its tables are preloaded
	// from its executable instead, and loaded for it after its exec.
	ld := unwind.Wire(&t, o.Pid, nil)
	if child != nil {
		ld.Only = pid
		loaded := t.Loaded
		t.Loaded = func() error {
			if err := loaded(); err != nil {
				return err
			}
			ld.PreloadCommand(o.Command[0])
			return nil
		}
	}
	s, err := ld.Open(t)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	defer ld.Stop()
	ro := runctl.Options{Duration: o.Duration}
	if child != nil {
		c := child
		child = nil
		if err := c.Go(); err != nil {
			c.Abort()
			return nil, err
		}
		ro.Target = c.Cmd
	}
	run, err := s.Run(ctx, ro)
	if err != nil {
		return nil, err
	}
	res := &Result{Lib: lib, Elapsed: run.Elapsed, ExitCode: run.ExitCode, Command: o.Command, Fallback: s.MultiFallback()}
	if res.Edges, err = readEdges(maps.Edges); err != nil {
		return nil, err
	}
	if err := maps.Counters.Read(&res.Counters); err != nil {
		return nil, err
	}
	resolve(res, FindCycles(res.Edges), ld)
	return res, nil
}

// readEdges reads the lock-order graph.
func readEdges(m *ebpf.Map) ([]Edge, error) {
	var out []Edge
	var k deadlockDlEdgeKey
	var v deadlockDlEdge
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, Edge{Pid: k.Pid, From: k.From, To: k.To, FromMode: Mode(k.FromMode), ToMode: Mode(k.ToMode),
			FromStack: v.FromStack, ToStack: v.ToStack, Count: v.Count, Tid: v.Tid, Comm: bpfmaps.CString(v.Comm[:])})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the lock-order graph: %w", err)
	}
	return out, nil
}

// findLib finds the object whose pthread functions are probed: lib as
// given, else the libc the process maps (or its executable, when static),
// else the system's libc.so.6.
func findLib(lib string, pid int) (string, error) {
	if lib != "" {
		if _, err := os.Stat(lib); err != nil {
			return "", fmt.Errorf("--lib: %w", err)
		}
		return filepath.Abs(lib)
	}
	p, err := procfs.Libc(pid)
	if err != nil || p != "" {
		return p, err
	}
	if pid > 0 {
		return fmt.Sprintf("/proc/%d/exe", pid), nil // a static program has its own
	}
	return "", errors.New("no libc.so.6 found: give the library or binary that has the pthread functions with --lib")
}

// functions lists the function symbols of an ELF file.
func functions(path string) (map[string]bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	have := map[string]bool{}
	for _, get := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		syms, _ := get()
		for _, s := range syms {
			if (elf.ST_TYPE(s.Info) == elf.STT_FUNC || elf.ST_TYPE(s.Info) == elf.STT_GNU_IFUNC) && s.Section != elf.SHN_UNDEF {
				have[s.Name] = true
			}
		}
	}
	return have, nil
}
