package cputime

import (
	"reflect"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadCputime, cputimeMapLost, &counts{}); err != nil {
		t.Fatal(err)
	}
}

// A CPU's idle time is the interval less its tasks' time (the program
// does not clock the idle task); a CPU busier than the interval (its
// tasks' runtime read a little after the interval's end) is not idle.
func TestIdleIsTheRest(t *testing.T) {
	prev := Snapshot{At: 1000, Tasks: map[uint32]*Task{7: {Tid: 7, PerCPU: []uint64{100, 0}}}}
	cur := Snapshot{At: 2000, Tasks: map[uint32]*Task{
		7: {Tid: 7, PerCPU: []uint64{500, 0}},
		8: {Tid: 8, PerCPU: []uint64{0, 1010}},
	}}
	iv := Diff(prev, cur, 2)
	if want := []uint64{400, 1010}; !reflect.DeepEqual(iv.BusyNS, want) {
		t.Errorf("busy %v, want %v", iv.BusyNS, want)
	}
	if want := []uint64{600, 0}; !reflect.DeepEqual(iv.IdleNS, want) {
		t.Errorf("idle %v, want %v", iv.IdleNS, want)
	}
}

// TestFirstSliceSeeded starts a CPU hog before the attach and stops it
// briefly after, so its first switch on its CPU is likely its own
// switch-out (the program then keeps no base for it); the first snapshot
// comes 100 ms into its next slice, and a second stop ends that
// slice before the second snapshot. The time between the snapshots must
// match the kernel's schedstat. Seeding the hog with its runtime at the
// first snapshot instead of at its switch-in lost those 100 ms whenever
// nothing preempted the hog before the first snapshot; three rounds, each
// on a fresh program.
func TestFirstSliceSeeded(t *testing.T) {
	testutil.RequirePrivileged(t)
	hog := testutil.Start(t, "taskset", "-c", strconv.Itoa(runtime.NumCPU()-1), "sh", "-c", "while :; do :; done")
	pid := hog.Process.Pid
	// pause stops the hog for a while: it switches out, then back in.
	pause := func(d time.Duration) {
		hog.Process.Signal(syscall.SIGSTOP)
		time.Sleep(d)
		hog.Process.Signal(syscall.SIGCONT)
	}
	for round := range 3 {
		time.Sleep(300 * time.Millisecond)
		tr, err := Start()
		if err != nil {
			t.Fatal(err)
		}
		// snap is the hog's time by sonde's snapshot and by schedstat.
		snap := func() (uint64, time.Duration) {
			s, err := tr.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			r, _ := procfs.OnCPU(pid, 0)
			if tk := s.Tasks[uint32(pid)]; tk != nil {
				return tk.Total(), r
			}
			return 0, r
		}
		pause(50 * time.Millisecond)
		time.Sleep(100 * time.Millisecond) // short: not preempted meanwhile
		e1, r1 := snap()
		time.Sleep(300 * time.Millisecond)
		pause(100 * time.Millisecond)
		time.Sleep(600 * time.Millisecond)
		e2, r2 := snap()
		tr.Close()
		exact, ref := time.Duration(e2-e1), r2-r1
		t.Logf("round %d: hog between snapshots: sonde %v, schedstat %v", round, exact, ref)
		// schedstat of a running task lags by up to a tick (4 ms at HZ=250).
		if d := exact - ref; d < -10*time.Millisecond || d > 10*time.Millisecond {
			t.Errorf("round %d: hog: sonde %v vs schedstat %v between snapshots", round, exact, ref)
		}
	}
}
