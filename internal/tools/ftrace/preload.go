package ftrace

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/host"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/tools/ftrace/preload"
)

// The shared-memory ring of preload/ring.h.
const (
	ringMagic  = 0x31474e5252465453
	ringHeader = 128
	ringRecord = 40
	ringSlots  = 1 << 18 // 10 MiB of calls between drains
	// header fields (byte offsets)
	hHead, hTail, hLost, hBias, hMinDur, hMaxDepth, hAttached, hOverflow = 16, 24, 32, 40, 48, 56, 60, 64
)

// Instrumented names the compiler instrumentation bin calls that the
// in-process recorder provides: "-finstrument-functions", or "-pg" on
// amd64 (mcount); "" for none.
func Instrumented(bin string) string {
	f, err := elf.Open(bin)
	if err != nil {
		return ""
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF {
			continue
		}
		switch {
		case s.Name == "__cyg_profile_func_enter":
			return "-finstrument-functions"
		case s.Name == "mcount" && runtime.GOARCH == "amd64" && f.Machine == elf.EM_X86_64:
			return "-pg"
		}
	}
	return ""
}

// funcAt finds the function of fs (sorted by address) that holds addr.
func funcAt(fs []Func, idx []int32, addr uint64) (int32, bool) {
	i := sort.Search(len(idx), func(i int) bool { return fs[idx[i]].Addr > addr }) - 1
	if i < 0 {
		return 0, false
	}
	f := fs[idx[i]]
	if addr >= f.Addr+max(f.Size, 1) {
		return 0, false
	}
	return idx[i], true
}

// ring is sonde's side of the shared memory.
type ring struct {
	mem  []byte
	path string
}

func (r *ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

func newRing(minDur time.Duration, maxDepth int) (*ring, error) {
	f, err := os.CreateTemp("/dev/shm", "sonde-ftrace-*")
	if err != nil {
		return nil, fmt.Errorf("creating the shared-memory ring: %w", err)
	}
	defer f.Close()
	size := ringHeader + ringSlots*ringRecord
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("sizing the shared-memory ring: %w", err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("mapping the shared-memory ring: %w", err)
	}
	r := &ring{mem: mem, path: f.Name()}
	binary.LittleEndian.PutUint64(mem[8:], ringSlots)
	*r.u64(hMinDur) = uint64(minDur)
	*r.u32(hMaxDepth) = uint32(maxDepth)
	atomic.StoreUint64(r.u64(0), ringMagic)
	return r, nil
}

func (r *ring) close() {
	unix.Munmap(r.mem)
	os.Remove(r.path)
}

// drain hands every complete call in the ring to fn, oldest first.
func (r *ring) drain(fn func(start, dur, addr uint64, tid uint32, depth int, unfinished bool)) {
	tail := atomic.LoadUint64(r.u64(hTail))
	head := atomic.LoadUint64(r.u64(hHead))
	for ; tail < head; tail++ {
		off := ringHeader + int(tail&(ringSlots-1))*ringRecord
		if atomic.LoadUint64(r.u64(off)) != tail+1 {
			break // still being written
		}
		rec := r.mem[off : off+ringRecord]
		le := binary.LittleEndian
		fn(le.Uint64(rec[8:]), le.Uint64(rec[16:]), le.Uint64(rec[24:]), le.Uint32(rec[32:]), int(le.Uint16(rec[36:])), le.Uint16(rec[38:])&2 != 0)
		atomic.StoreUint64(r.u64(hTail), tail+1)
	}
}

// recorderObject writes this architecture's recorder into dir.
func recorderObject(dir string) (string, error) {
	b, err := preload.Objects.ReadFile("recorder_" + runtime.GOARCH + ".so")
	if err != nil {
		return "", fmt.Errorf("the in-process recorder is not built for %s", runtime.GOARCH)
	}
	p := filepath.Join(dir, "libsonde-ftrace.so")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		return "", fmt.Errorf("writing the in-process recorder: %w", err)
	}
	return p, nil
}

// recordPreload runs the command with the in-process recorder and drains
// its ring into the data file.
func recordPreload(ctx context.Context, o Options, bin string, fs []Func) (*Summary, error) {
	dir, err := os.MkdirTemp("", "sonde-ftrace")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	so, err := recorderObject(dir)
	if err != nil {
		return nil, err
	}
	r, err := newRing(o.MinDuration, o.Depth)
	if err != nil {
		return nil, err
	}
	defer r.close()
	const mech = "preload"
	fmt.Fprintf(o.Log, "sonde: tracing %d functions of %s with the in-process recorder (%s, LD_PRELOAD)\n", len(fs), filepath.Base(bin), Instrumented(bin))
	p := NewProfile(fs, mech, o.filter())
	p.Meta.Command, p.Meta.SondeVersion, p.Meta.StartUnixNS, p.Meta.Target = o.Command, o.Version, time.Now().UnixNano(), "command"
	host.Fill(&p.Meta)
	sk, err := newSink(o.Output, p)
	if err != nil {
		return nil, err
	}
	// The recorder reports the function's address (-finstrument-functions)
	// or one inside it (-pg: where mcount returns to).
	var idx []int32
	for i, f := range fs {
		if f.Binary == bin {
			idx = append(idx, int32(i))
		}
	}
	sort.Slice(idx, func(a, b int) bool { return fs[idx[a]].Addr < fs[idx[b]].Addr })
	// Nothing to attach before the exec: the recorder is in the program
	// from its first instruction.
	cmd := exec.Command(bin, o.Command[1:]...)
	cmd.Args[0] = o.Command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+strings.TrimPrefix(os.Getenv("LD_PRELOAD")+" "+so, " "), "SONDE_FTRACE_RING="+r.path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		sk.f.Abort()
		return nil, fmt.Errorf("starting %s: %w", o.Command[0], err)
	}
	pid := uint32(cmd.Process.Pid)
	sk.comm = func(_ uint64, p, tid uint32) string {
		if p != pid || tid != pid {
			return ""
		}
		// Gone already: the kernel named the main thread after the file
		// it executed (15 bytes at most), unless it renamed itself.
		return truncComm(filepath.Base(bin))
	}
	drain := func() {
		bias := atomic.LoadUint64(r.u64(hBias))
		r.drain(func(start, dur, addr uint64, tid uint32, depth int, unfinished bool) {
			fn, ok := funcAt(fs, idx, addr-bias)
			if !ok {
				return // a function -F/-N left out
			}
			c := Call{Fn: fn, Start: start, Dur: dur, Depth: depth, Unfinished: unfinished}
			sk.add(uint64(tid), pid, tid, &c)
		})
	}
	ticks := 0
	run, err := runctl.Run(ctx, runctl.Options{Target: cmd, Duration: o.Duration, Interval: 20 * time.Millisecond, OnInterval: func() error {
		drain()
		if ticks++; ticks%50 == 0 {
			return sk.flush()
		}
		return nil
	}})
	if err != nil {
		sk.f.Abort()
		return nil, err
	}
	drain()
	sum := &Summary{Funcs: len(fs), Mechanism: mech, Elapsed: run.Elapsed, ExitCode: run.ExitCode, Lost: atomic.LoadUint64(r.u64(hLost))}
	if atomic.LoadUint32(r.u32(hAttached)) == 0 {
		p.Meta.Warnings = append(p.Meta.Warnings, "the in-process recorder never loaded (a static binary ignores LD_PRELOAD): record with --mechanism uprobe")
		fmt.Fprintln(o.Log, "sonde: "+p.Meta.Warnings[len(p.Meta.Warnings)-1])
	}
	return sk.close(sum, atomic.LoadUint64(r.u64(hOverflow)), 128)
}

// truncComm is a name as the kernel keeps it (TASK_COMM_LEN, 16 with the NUL).
func truncComm(s string) string {
	if len(s) > 15 {
		return s[:15]
	}
	return s
}
