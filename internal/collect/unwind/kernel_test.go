package unwind

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// loadTestWalker loads the walker's object with room for 1 M rows, its
// options set from consts and only program prog (none when empty); its
// maps, and the walker's own as a tool's session gets them.
func loadTestWalker(t *testing.T, consts map[string]any, prog string) (*ebpf.Collection, walkerMaps, Maps) {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	spec, err := loadWalker()
	if testWalkerObject != "" {
		gen := spec
		if spec, err = ebpf.LoadCollectionSpec(testWalkerObject); err == nil {
			// A variant without some maps (no Python walk) gets them,
			// unused, so the maps assign as usual.
			for name, m := range gen.Maps {
				if spec.Maps[name] == nil {
					spec.Maps[name] = m.Copy()
				}
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := Configure(spec, 1<<20); err != nil {
		t.Fatal(err)
	}
	for k, v := range consts {
		if err := spec.Variables[k].Set(v); err != nil {
			t.Fatalf("setting %s: %v", k, err)
		}
	}
	for name := range spec.Programs {
		if name != prog {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatalf("loading the walker: %+v", err)
	}
	var m walkerMaps
	var w Maps
	for _, dst := range []any{&m, &w} {
		if err := bpfskel.AssignMaps(spec, coll, dst); err != nil {
			coll.Close()
			t.Fatal(err)
		}
	}
	return coll, m, w
}

// walkTarget loads the walker's own object, samples pid's CPU time at hz
// for d with the walker, and returns the stacks' counts, the walker's
// counters and the program's mean run time (bpf_stats: the walk and the
// stack map insert, per sample).
func walkTarget(t *testing.T, pid int, hz uint64, d time.Duration, prog string) (map[uint64]uint64, Counters, time.Duration, *Loader) {
	t.Helper()
	consts := Consts()
	consts["target_pid"] = uint32(pid)
	coll, maps, w := loadTestWalker(t, consts, prog)
	defer coll.Close()
	objs := struct {
		walkerMaps
		WalkSample *ebpf.Program
	}{maps, coll.Programs[prog]}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enabling BPF run-time stats: %v", err)
	}
	defer stats.Close()
	l := New(w, 1<<20)
	l.Only = pid
	if walkPython {
		l.py.Procs = maps.PyProcs
	}
	if err := l.Load(pid); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	ev, _ := perf.ParseEvent("cpu-clock")
	attr := perf.NewAttr(perf.AttrOptions{Event: ev, Freq: hz, Disabled: true})
	attr.Bits &^= unix.PerfBitWatermark
	attr.Wakeup = 0
	fd, err := perf.Open(&attr, pid, -1, -1, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, objs.WalkSample.FD()); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	unix.Close(fd)
	l.Stop()
	ps, err := objs.WalkSample.Stats()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[uint64]uint64{}
	var k, n uint64
	it := objs.Counts.Iterate()
	for it.Next(&k, &n) {
		counts[k] = n
	}
	var per time.Duration
	if ps.RunCount > 0 {
		per = ps.Runtime / time.Duration(ps.RunCount)
	}
	c := l.Counters()
	stacks := map[uint64]Stack{}
	var buf [MaxFrames]uint64
	for id := range counts {
		if s, ok := l.Stack(id, &buf); ok {
			s.PCs = append([]uint64(nil), s.PCs...)
			stacks[id] = s
		}
	}
	walked[t.Name()] = stacks
	return counts, c, per, l
}

// testWalkerObject, when set, is the walker object loadTestWalker loads
// instead of the generated one (a variant compiled by the test).
var testWalkerObject string

// walkPython has walkTarget's loader tell the walker about CPython
// processes (a tool's loader always does, unless NoInterp).
var walkPython bool

// walked holds each test's stacks, read before its maps closed.
var walked = map[string]map[uint64]Stack{}

// TestWalkerKernel: the walker unwinds a -fomit-frame-pointer binary and
// python3 completely, and its cost per sample is logged (for
// docs/unwinding.md).
func TestWalkerKernel(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	script := dir + "/loop.py"
	if err := os.WriteFile(script, []byte("import time\ndef f(n):\n    s = 0\n    for i in range(n):\n        s += i * i % 7\n    return s\nend = time.time() + 60\nwhile time.time() < end:\n    f(10000)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"omit-frame-pointer", []string{bin, "60"}}, // killed when the case ends
		{"python3", []string{"/usr/bin/python3.11", script}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.cmd[0]); err != nil {
				t.Skip(err)
			}
			cmd := testutil.Start(t, c.cmd[0], c.cmd[1:]...)
			testutil.WaitMapped(t, cmd.Process.Pid, "libc.so")
			_, _, fpPer, _ := walkTarget(t, cmd.Process.Pid, 999, time.Second, walkerProgFpSample)
			counts, ctr, per, l := walkTarget(t, cmd.Process.Pid, 999, 2*time.Second, walkerProgWalkSample)
			var total, complete, frames uint64
			for id, n := range counts {
				total += n
				s := walked[t.Name()][id]
				if s.Complete() {
					complete += n
				}
				frames += n * uint64(len(s.PCs))
			}
			st := l.Stats()
			t.Logf("%d samples, %.1f%% complete, %.1f frames each; walker %+v; %v per sample (frame pointers, bpf_get_stackid: %v); loader: %d files, %d rows (%d KB), %v loading",
				total, 100*float64(complete)/float64(max(total, 1)), float64(frames)/float64(max(total, 1)), ctr, per, fpPer,
				st.Files, st.Rows, st.RowBytes/1024, st.LoadTime)
			if total < 200 || float64(complete) < 0.95*float64(total) {
				t.Errorf("%d of %d samples complete, want ≥ 95%%", complete, total)
			}
		})
	}
}

// TestProbe: this kernel (6.18) has both helpers; the probe must say so.
func TestProbe(t *testing.T) {
	testutil.RequirePrivileged(t)
	if err := Probe(); err != nil {
		t.Fatal(err)
	}
}

// TestLoaderMapsAgreeWithTables: after Load, the walker's view of a
// process (mapping search, bias, row search, rule dictionary, done here in
// Go over the map contents) gives every sampled address of the libc mapping
// the rule unwindtable.Table.Lookup gives.
func TestLoaderMapsAgreeWithTables(t *testing.T) {
	testutil.RequirePrivileged(t)
	coll, m, w := loadTestWalker(t, nil, "")
	defer coll.Close()
	l := New(w, 1<<20)
	// A dynamically linked process (the test binary has no libc).
	sleep := testutil.Start(t, "sleep", "10")
	testutil.WaitMapped(t, sleep.Process.Pid, "libc.so")
	pid := sleep.Process.Pid
	if err := l.Load(pid); err != nil {
		t.Fatal(err)
	}
	var pv procValue
	if err := m.UnwindProcs.Lookup(uint32(pid), &pv); err != nil {
		t.Fatal(err)
	}
	maps, err := procfs.ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, mp := range maps {
		if !mp.Exec() || !strings.Contains(mp.Path, "libc.so") {
			continue
		}
		tab, err := unwindtable.Build(testutil.Open(t, mp.Path))
		if err != nil {
			t.Fatal(err)
		}
		found := -1
		for i := 0; i < int(pv.Count); i++ {
			if pv.M[i].Start == mp.Start {
				found = i
			}
		}
		if found < 0 || pv.M[found].RowCount == 0 {
			t.Fatalf("libc mapping %#x has no rows in the walker's view", mp.Start)
		}
		e := &pv.M[found]
		for pc := mp.Start; pc < mp.End; pc += 97 {
			// The walker's search, over the map.
			rel := pc - e.Bias
			lo, hi := e.RowFirst, e.RowFirst+e.RowCount
			for lo < hi {
				mid := lo + (hi-lo)/2
				var r rowValue
				if err := m.UnwindRows.Lookup(mid, &r); err != nil {
					t.Fatal(err)
				}
				if uint64(r.Pc) <= rel {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			var r rowValue
			if err := m.UnwindRows.Lookup(lo-1, &r); err != nil {
				t.Fatal(err)
			}
			var got ruleValue
			if err := m.UnwindRules.Lookup(uint32(r.Rule), &got); err != nil {
				t.Fatal(err)
			}
			vaddr := pc - mp.Start + (tab.Exec[0].Vaddr - tab.Exec[0].Off + mp.Offset)
			want := tab.Lookup(vaddr).Rule
			if got.Cfa != want.CFA || got.Fp != want.FP || got.Ra != want.RA || got.Kind != uint8(want.Kind) || got.Flags != want.Flags {
				t.Fatalf("pc %#x (libc %#x): walker view %+v, table %+v", pc, vaddr, got, want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("checked %d addresses of libc", checked)
	}
	t.Logf("%d libc addresses: the walker's maps agree with the table", checked)
}
