package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// VmRSS reads a process's resident set size in KiB from /proc/PID/status.
func VmRSS(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// PeakRSS is the peak resident set size in KiB of a command that has
// ended (its rusage, from wait4).
func PeakRSS(cmd *exec.Cmd) int {
	return int(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
}

// WaitBPFLinks waits until process pid holds at least n BPF links (its
// programs attached: fdinfo says link_id), so a test starts its workload
// only once a tool traces, rather than after a guessed sleep.
func WaitBPFLinks(t testing.TB, pid, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if bpfLinks(pid) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not attach %d BPF programs within %v", pid, n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func bpfLinks(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err == nil && strings.Contains(string(b), "\nlink_id:") {
			n++
		}
	}
	return n
}

// MainOrHeldChild is the TestMain of a package whose tests start commands
// held before their exec (bpfskel's Tool.Command, record -- CMD): the test
// binary is re-executed as the held child, as sonde is, and then execs the
// command instead of running tests.
func MainOrHeldChild(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
	}
	os.Exit(m.Run())
}

// Background is a sonde run started by StartSonde.
type Background struct {
	Cmd            *exec.Cmd
	Stdout, Stderr strings.Builder
	done           chan struct{}
	err            error
}

// StartSonde starts sonde with args in dir without waiting for it; it is
// killed at the end of the test if still running.
func StartSonde(t testing.TB, dir string, args ...string) *Background {
	t.Helper()
	b := &Background{Cmd: exec.Command(Sonde(t), args...), done: make(chan struct{})}
	b.start(t, dir)
	return b
}

// StartSondeReady is StartSonde that returns once sonde's measurement has
// begun (its ready signal, NotifyReady).
func StartSondeReady(t testing.TB, dir string, args ...string) *Background {
	t.Helper()
	b := &Background{Cmd: exec.Command(Sonde(t), args...), done: make(chan struct{})}
	ready := NotifyReady(t, b.Cmd)
	b.start(t, dir)
	if err := ready.wait(ReadyTimeout); err != nil {
		t.Fatalf("sonde %s: %v\n%s", strings.Join(args, " "), err, b.Stderr.String())
	}
	return b
}

func (b *Background) start(t testing.TB, dir string) {
	t.Helper()
	b.Cmd.Dir = dir
	b.Cmd.Stdout, b.Cmd.Stderr = &b.Stdout, &b.Stderr
	if err := b.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = b.Cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		b.Cmd.Process.Kill()
		<-b.done
	})
}

// Done is closed once the run has ended.
func (b *Background) Done() <-chan struct{} { return b.done }

// Wait waits for the run to end and returns how it ended.
func (b *Background) Wait() error {
	<-b.done
	return b.err
}

// SyncBuffer is a buffer a command writes (as its Stdout or Stderr) while
// the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// EventFDs counts the BPF links and perf events process pid holds open.
func EventFDs(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && (l == "anon_inode:bpf_link" || l == "anon_inode:[perf_event]") {
			n++
		}
	}
	return n
}

// WaitMapped waits until process pid maps a file whose path holds name
// (its dynamic loader has mapped libc, say), so a test reads its mappings
// once they are there rather than after a guessed sleep.
func WaitMapped(t testing.TB, pid int, name string) {
	t.Helper()
	WaitFor(t, ReadyTimeout, fmt.Sprintf("process %d to map %s", pid, name), func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		return strings.Contains(string(b), name)
	})
}
