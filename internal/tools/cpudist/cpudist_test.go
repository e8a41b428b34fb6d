package cpudist_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/cpudist"
)

// onCPU is the process's time on a CPU so far, from /proc/PID/schedstat
// (the scheduler's own sum_exec_runtime, ns).
func onCPU(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// switches is how many times the process left its CPU so far, voluntarily
// or not (/proc/PID/status: the scheduler's own counts).
func switches(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
			c, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			n += c
		}
	}
	return n
}

// waitBlocked waits until pid is off its CPU, asleep in the kernel (a
// wait channel is shown only then).
func waitBlocked(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid)); len(b) > 0 && string(b) != "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never blocked", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCpudistAgainstSchedstat: the total of the runs cpudist measures for
// a process equals the scheduler's own account of its CPU time
// (/proc/PID/schedstat) over the same span within 1%, and the runs its
// count of switches out (/proc/PID/status); libbpf-tools' cpudist on the
// same process counts the preempted runs among them; --offcpu counts a
// wait per sleep.
func TestCpudistAgainstSchedstat(t *testing.T) {
	testutil.RequirePrivileged(t)
	peerBin := testutil.RequireTool(t, "/usr/sbin/cpudist", "libbpf-tools")
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "cpuwork", []string{testutil.PackageC("cpuwork.c")})
	const n = 50
	// Started and blocked in its read of stdin: not running when tracing
	// begins, so its first run is seen from its start. It shares its CPU
	// with a hog, which preempts some of its runs: those are the runs
	// libbpf-tools' cpudist counts (on a quiet CPU there may be none).
	testutil.Start(t, "taskset", "-c", "0", "sh", "-c", "while :; do :; done")
	work := testutil.StartReady(t, "taskset", "-c", "0", bin, strconv.Itoa(n))
	pid := work.Cmd.Process.Pid
	waitBlocked(t, pid)

	peer := testutil.StartPeer(t, func(string) bool { return true }, peerBin, "-p", strconv.Itoa(pid))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		r   *cpudist.Result
		err error
	}
	on, off := make(chan result, 1), make(chan result, 1)
	for _, c := range []struct {
		off bool
		to  chan result
	}{{false, on}, {true, off}} {
		go func() {
			r, err := cpudist.Run(ctx, cpudist.Options{Pid: pid, Split: bpfskel.SplitTid, OffCPU: c.off})
			c.to <- result{r, err}
		}()
	}
	testutil.WaitBPFLinks(t, os.Getpid(), 2, 30*time.Second)
	testutil.WaitBPFLinks(t, peer.Cmd.Process.Pid, 1, 30*time.Second)

	before, switched := onCPU(t, pid), switches(t, pid)
	fmt.Fprintln(work.In, "go")
	if l, err := work.Line(); l != "done" {
		t.Fatalf("cpuwork printed %q (%v)", l, err)
	}
	waitBlocked(t, pid)
	want, runs := onCPU(t, pid)-before, switches(t, pid)-switched
	cancel()
	peerOut := strings.Join(peer.Stop(), "\n")
	onR, offR := <-on, <-off
	if onR.err != nil || offR.err != nil {
		t.Fatal(onR.err, offR.err)
	}
	g := onR.r.Groups[uint32(pid)]
	if g == nil {
		t.Fatalf("no runs of process %d: %+v", pid, onR.r.Groups)
	}
	if diff := float64(g.SumNS) - float64(want); diff > 0.01*float64(want) || -diff > 0.01*float64(want) {
		t.Errorf("cpudist's total %v, schedstat's %v: more than 1%% apart", time.Duration(g.SumNS), time.Duration(want))
	}
	// Every switch out is a run counted, or one begun before tracing
	// (counted apart). A run whose switch in was not seen (now and then one
	// on this VM) is timed from the thread's switch out before it.
	if g.Runs+onR.r.Unknown != runs || g.Runs < n || g.Hist.Count() != g.Runs {
		t.Errorf("%d runs (%d in the histogram), the kernel counted %d switches out (at least %d: one per sleep); counters %+v",
			g.Runs, g.Hist.Count(), runs, n, onR.r.Counts)
	}
	// libbpf-tools' cpudist (as bcc's) counts only the runs that ended with
	// the task still runnable (preempted), not those that ended in a sleep.
	peerRuns := sumCounts(t, peerOut)
	if peerRuns == 0 || peerRuns > g.Runs-n {
		t.Errorf("libbpf-tools' cpudist counted %d runs, sonde %d of which %d ended in a sleep:\n%s", peerRuns, g.Runs, n, peerOut)
	}
	w := offR.r.Groups[uint32(pid)]
	if w == nil || w.Runs < n || w.SumNS < n*uint64(time.Millisecond) {
		t.Errorf("--offcpu: %+v, want at least %d waits of at least 1 ms", w, n)
	}
	t.Logf("on-CPU total %v in %d runs (schedstat %v, %d switches out; libbpf-tools %d preempted runs); off-CPU %v in %d waits",
		time.Duration(g.SumNS), g.Runs, time.Duration(want), runs, peerRuns, time.Duration(w.SumNS), w.Runs)
}

// sumCounts adds up the count column of a bcc-style histogram.
func sumCounts(t *testing.T, text string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range regexp.MustCompile(`(?m)^\s*\d+ -> \d+\s*: (\d+)`).FindAllStringSubmatch(text, -1) {
		c, _ := strconv.ParseUint(m[1], 10, 64)
		n += c
	}
	return n
}
