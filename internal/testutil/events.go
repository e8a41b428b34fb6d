package testutil

import (
	"bufio"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Events runs a tool in the test process, on its own goroutine, and keeps
// the events it reports while it runs.
type Events[T, R any] struct {
	mu   sync.Mutex
	got  []T
	res  R
	err  error
	done chan struct{}
}

// Collect starts run, which hands each event to out until it returns (its
// context ends).
func Collect[T, R any](run func(out func(T)) (R, error)) *Events[T, R] {
	e := &Events[T, R]{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.res, e.err = run(func(x T) {
			e.mu.Lock()
			e.got = append(e.got, x)
			e.mu.Unlock()
		})
	}()
	return e
}

// All is a copy of the events reported so far.
func (e *Events[T, R]) All() []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]T(nil), e.got...)
}

// Wait waits for the run to return (cancel its context first) and gives
// its result; a failed run fails the test.
func (e *Events[T, R]) Wait(t testing.TB) R {
	t.Helper()
	<-e.done
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.res
}

// Peer is a peer tool run beside the test with its output line-buffered
// (stdbuf -oL), keeping the lines it prints that keep accepts.
type Peer struct {
	Cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

// StartPeer starts bin with args; it is killed when the test ends.
func StartPeer(t testing.TB, keep func(line string) bool, bin string, args ...string) *Peer {
	t.Helper()
	p := &Peer{Cmd: exec.Command(RequireTool(t, "stdbuf", "coreutils"), append([]string{"-oL", bin}, args...)...), done: make(chan struct{})}
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Cmd.Process.Kill() })
	go func() {
		defer close(p.done)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			if keep(sc.Text()) {
				p.mu.Lock()
				p.lines = append(p.lines, sc.Text())
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Lines is a copy of the lines kept so far.
func (p *Peer) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Stop interrupts the peer (as Ctrl-C would), waits for it and returns
// every line kept, those it prints as it ends (a histogram) too: its
// output is read to the end before Wait, which closes the pipe.
func (p *Peer) Stop() []string {
	p.Cmd.Process.Signal(os.Interrupt)
	<-p.done
	p.Cmd.Wait()
	return p.Lines()
}

// WaitFor polls ok until it holds (a tool reported what the test made);
// the test fails after timeout, saying what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
	}
}
