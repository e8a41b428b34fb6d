package cputime

import (
	"reflect"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/bpfskel"
	"github.com/sonde-dev/sonde/internal/procfs"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadCputime, cputimeMapLost, &counts{}); err != nil {
		t.Fatal(err)
	}
}

// A thread running since a switch the program saw is seeded with its
// runtime at that switch-in; others with their runtime now; the idle task
// and CPUs with no switch seen yet do not count.
func TestSeedBases(t *testing.T) {
	onCPU := map[int]time.Duration{10: 5000, 11: 7000, 12: 9000}
	curr := []cputimeCputimeCurr{
		{Since: 100, Base: 4200, Tid: 11}, // running since a seen switch-in
		{Since: 0, Base: 0, Tid: 12},      // no switch seen on this CPU yet
		{Since: 90, Base: 0, Tid: 0},      // idle
	}
	got := seedBases(onCPU, curr)
	want := map[uint32]uint64{10: 5000, 11: 4200, 12: 9000}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("seedBases = %v, want %v", got, want)
	}
}

// TestFirstSliceSeeded starts a CPU hog after the attach, so the program
// sees it switch in, takes the first snapshot half a second later while
// the hog is still in that slice, and ends the slice (SIGSTOP) before the
// second: the time between the snapshots must match the kernel's
// schedstat. Seeding the hog with its runtime at the first snapshot
// instead of at its switch-in lost the half second.
func TestFirstSliceSeeded(t *testing.T) {
	testutil.RequirePrivileged(t)
	hog := testutil.Start(t, "taskset", "-c", strconv.Itoa(runtime.NumCPU()-1), "sh", "-c", "while :; do :; done")
	pid := hog.Process.Pid
	time.Sleep(300 * time.Millisecond)
	tr, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// Its first switch on that CPU since the attach is likely its own
	// switch-out: with no slice start seen, the program keeps no base.
	hog.Process.Signal(syscall.SIGSTOP)
	time.Sleep(50 * time.Millisecond)
	hog.Process.Signal(syscall.SIGCONT)
	time.Sleep(500 * time.Millisecond)
	s1, err := tr.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := procfs.OnCPU(pid, 0)
	// The slice must end between the snapshots: a stopped hog switches out.
	time.Sleep(300 * time.Millisecond)
	hog.Process.Signal(syscall.SIGSTOP)
	time.Sleep(100 * time.Millisecond)
	hog.Process.Signal(syscall.SIGCONT)
	time.Sleep(600 * time.Millisecond)
	s2, err := tr.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := procfs.OnCPU(pid, 0)
	var e1, e2 uint64
	if tk := s1.Tasks[uint32(pid)]; tk != nil {
		e1 = tk.Total()
	}
	if tk := s2.Tasks[uint32(pid)]; tk != nil {
		e2 = tk.Total()
	}
	exact, ref := time.Duration(e2-e1), r2-r1
	t.Logf("hog between snapshots: sonde %v, schedstat %v", exact, ref)
	// schedstat of a running task lags by up to a tick (4 ms at HZ=250).
	if d := exact - ref; d < -10*time.Millisecond || d > 10*time.Millisecond {
		t.Errorf("hog: sonde %v vs schedstat %v between snapshots", exact, ref)
	}
}
