package exitsnoop_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/exitsnoop"
)

// run is one exitsnoop.Run in the test process, collecting its exits.
type run struct {
	mu    sync.Mutex
	exits []exitsnoop.Exit
	res   *exitsnoop.Result
	err   error
	done  chan struct{}
}

func start(ctx context.Context, o exitsnoop.Options) *run {
	r := &run{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.res, r.err = exitsnoop.Run(ctx, o, func(x exitsnoop.Exit) {
			r.mu.Lock()
			r.exits = append(r.exits, x)
			r.mu.Unlock()
		})
	}()
	return r
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
	bin := testutil.BuildC(t, dir, name, []string{filepath.Join(testutil.RepoRoot(), "internal/tools/exitsnoop/testdata/exitwork.c")}, "-pthread")

	peer := exec.Command(testutil.RequireTool(t, "stdbuf", "coreutils"), "-oL", peerBin)
	pout, _ := peer.StdoutPipe()
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	defer peer.Process.Kill()
	var peerMu sync.Mutex
	var peerLines []string
	peerDone := make(chan struct{})
	go func() {
		defer close(peerDone)
		sc := bufio.NewScanner(pout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), name+" ") {
				peerMu.Lock()
				peerLines = append(peerLines, sc.Text())
				peerMu.Unlock()
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	procs := start(ctx, exitsnoop.Options{Comms: []string{name}})
	threads := start(ctx, exitsnoop.Options{Comms: []string{name}, PerThread: true})
	testutil.WaitBPFLinks(t, os.Getpid(), 2, 30*time.Second)
	testutil.WaitBPFLinks(t, peer.Process.Pid, 1, 30*time.Second)

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
	waitFor(t, "sonde", func() bool { return procs.has(last, 1) && threads.has(last, 4) })
	waitFor(t, "libbpf-tools", func() bool {
		peerMu.Lock()
		defer peerMu.Unlock()
		return len(peerLines) >= len(kids)
	})
	cancel()
	<-procs.done
	<-threads.done
	peer.Process.Signal(os.Interrupt)
	peer.Wait()
	<-peerDone
	for _, r := range []*run{procs, threads} {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.res.Lost.Ring != 0 {
			t.Errorf("lost %d exits", r.res.Lost.Ring)
		}
	}

	if len(procs.exits) != len(kids) {
		t.Errorf("sonde reported %d exits of the test's %d processes: %+v", len(procs.exits), len(kids), procs.exits)
	}
	for _, k := range kids {
		var got []exitsnoop.Exit
		for _, x := range procs.exits {
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
	if n := threads.count(last); n != 4 {
		t.Errorf("--per-thread: %d exits of the threaded process, want its 4 threads", n)
	}
	if len(threads.exits) != len(kids)+3 {
		t.Errorf("--per-thread: %d exits, want %d", len(threads.exits), len(kids)+3)
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
	t.Logf("sonde: %d process exits, %d thread exits; libbpf-tools: %d", len(procs.exits), len(threads.exits), len(peerLines))
}

func (r *run) count(pid int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.exits {
		if int(x.Pid) == pid {
			n++
		}
	}
	return n
}

func (r *run) has(pid, n int) bool { return r.count(pid) >= n }

// waitFor waits until ok (a tool printed what the test made); the test
// fails after 30 s.
func waitFor(t *testing.T, who string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never reported the test's last exit", who)
		}
	}
}
