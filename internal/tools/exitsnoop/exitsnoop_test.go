package exitsnoop_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/exitsnoop"
)

// run is one exitsnoop.Run in the test process, collecting its exits.
type run = *testutil.Events[exitsnoop.Exit, *exitsnoop.Result]

func start(ctx context.Context, o exitsnoop.Options) run {
	return testutil.Collect(func(out func(exitsnoop.Exit)) (*exitsnoop.Result, error) { return exitsnoop.Run(ctx, o, out) })
}

// child is one process the test ran, with what it knows of it.
type child struct {
	pid          int
	code, signal int
	minAge, life time.Duration // the age it must at least have; fork to reaped, as the test saw it
}

// TestExitsnoopAgainstLibbpfTools: every process the test starts and ends
// is reported once, with its pid, parent, exit code or signal and an age
// between what it slept and what the test measured from fork to reaping;
// --per-thread adds its threads. libbpf-tools' exitsnoop sees the same
// processes.
func TestExitsnoopAgainstLibbpfTools(t *testing.T) {
	testutil.RequirePrivileged(t)
	peerBin := testutil.RequireTool(t, "/usr/sbin/exitsnoop", "libbpf-tools")
	dir := t.TempDir()
	// A name of its own: the comm filters this test's processes from the rest.
	name := fmt.Sprintf("xs%d", time.Now().UnixNano()%1e9)
	bin := testutil.BuildC(t, dir, name, []string{testutil.PackageC("exitwork.c")}, "-pthread")

	peer := testutil.StartPeer(t, func(l string) bool { return strings.HasPrefix(l, name+" ") }, peerBin)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	procs := start(ctx, exitsnoop.Options{Comms: []string{name}})
	threads := start(ctx, exitsnoop.Options{Comms: []string{name}, PerThread: true})
	testutil.WaitBPFLinks(t, os.Getpid(), 2, 30*time.Second)
	testutil.WaitBPFLinks(t, peer.Cmd.Process.Pid, 1, 30*time.Second)

	var kids []child
	runOne := func(minAge time.Duration, code, signal int, args ...string) {
		t.Helper()
		c := exec.Command(bin, args...)
		t0 := time.Now()
		if signal != 0 {
			out, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
				t.Fatalf("%s wait: printed %q, not ready", bin, l)
			}
			c.Process.Kill()
			c.Wait()
		} else if err := c.Run(); err != nil && c.ProcessState.ExitCode() != code {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		kids = append(kids, child{pid: c.Process.Pid, code: code, signal: signal, minAge: minAge, life: time.Since(t0)})
	}
	for range 5 {
		runOne(0, 0, 0, "code", "0")
	}
	runOne(0, 3, 0, "code", "3")
	runOne(300*time.Millisecond, 0, 0, "sleep", "300")
	runOne(0, 0, 9, "wait")
	runOne(0, 0, 0, "threads", "3") // the last: its four exits end the per-thread run

	last := kids[len(kids)-1].pid
	testutil.WaitFor(t, 30*time.Second, "sonde to report the test's last exit", func() bool { return has(procs, last, 1) && has(threads, last, 4) })
	testutil.WaitFor(t, 30*time.Second, "libbpf-tools to report the test's last exit", func() bool { return len(peer.Lines()) >= len(kids) })
	cancel()
	for _, r := range []run{procs, threads} {
		if res := r.Wait(t); res.Counts.Ring != 0 {
			t.Errorf("lost %d exits", res.Counts.Ring)
		}
	}
	peerLines := peer.Stop()
	procExits, threadExits := procs.All(), threads.All()

	if len(procExits) != len(kids) {
		t.Errorf("sonde reported %d exits of the test's %d processes: %+v", len(procExits), len(kids), procExits)
	}
	for _, k := range kids {
		var got []exitsnoop.Exit
		for _, x := range procExits {
			if int(x.Pid) == k.pid {
				got = append(got, x)
			}
		}
		if len(got) != 1 {
			t.Errorf("process %d: %d exits reported, want 1", k.pid, len(got))
			continue
		}
		x := got[0]
		age := time.Duration(x.AgeNS)
		if x.Code != k.code || x.Signal != k.signal || int(x.PPid) != os.Getpid() || age < k.minAge || age > k.life {
			t.Errorf("process %d: %+v (%s), want code %d signal %d ppid %d and an age in [%v, %v]",
				k.pid, x, x.Status(), k.code, k.signal, os.Getpid(), k.minAge, k.life)
		}
	}
	if n := count(threads, last); n != 4 {
		t.Errorf("--per-thread: %d exits of the threaded process, want its 4 threads", n)
	}
	if len(threadExits) != len(kids)+3 {
		t.Errorf("--per-thread: %d exits, want %d", len(threadExits), len(kids)+3)
	}
	// The peer prints one line per process (PCOMM PID PPID TID AGE(s) EXIT_CODE).
	if len(peerLines) != len(kids) {
		t.Errorf("libbpf-tools' exitsnoop saw %d exits of the test's processes, want %d:\n%s", len(peerLines), len(kids), strings.Join(peerLines, "\n"))
	}
	for _, l := range peerLines {
		if strings.Contains(l, "signal 9") != strings.Contains(l, fmt.Sprint(kids[7].pid)) {
			t.Errorf("libbpf-tools' line %q disagrees on the killed process %d", l, kids[7].pid)
		}
	}
	t.Logf("sonde: %d process exits, %d thread exits; libbpf-tools: %d", len(procExits), len(threadExits), len(peerLines))
}

// count is how many exits of pid r reported so far.
func count(r run, pid int) int {
	n := 0
	for _, x := range r.All() {
		if int(x.Pid) == pid {
			n++
		}
	}
	return n
}

func has(r run, pid, n int) bool { return count(r, pid) >= n }
