package runctl

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// ChildArg is the hidden first argument with which sonde re-executes itself
// as the held child of `sonde record -- CMD` (and stat, syscount…): it
// blocks on a pipe until the events are open, then execs CMD. Counting
// starts at that exec (enable_on_exec), so none of sonde's own work is
// measured.
const ChildArg = "__sonde_exec_child"

// The held child must exec from the main thread, whose id is the pid the
// events and pid-filtered probes were opened on: an exec from another
// thread replaces the main thread's task, and what was opened on it never
// sees the command. Package inits run on the main thread; locking it here
// keeps main there, in sonde and in every test binary that is a held child.
func init() {
	if len(os.Args) > 1 && os.Args[1] == ChildArg {
		runtime.LockOSThread()
	}
}

// RunChild is the child side; it never returns on success. The caller must
// run on the main OS thread (runtime.LockOSThread in init), because the
// events are attached to the thread whose id is the pid.
func RunChild(args []string) {
	hold, ready := os.NewFile(3, "sonde-hold"), os.NewFile(4, "sonde-ready")
	// Everything of sonde's own is done before the parent hears we are
	// ready: from the release to the exec the child only returns from a
	// read and calls execve, so a tool counting from the release (a BPF
	// gate) sees the command, not sonde's start-up.
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde: %s: command not found\n", args[0])
		os.Exit(127)
	}
	env := os.Environ()
	ready.Write([]byte{1})
	ready.Close()
	var b [1]byte
	if n, _ := hold.Read(b[:]); n != 1 {
		os.Exit(127) // the parent gave up before releasing us
	}
	err = syscall.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "sonde: exec %s: %v\n", args[0], err)
	os.Exit(126)
}

// Child is a command started under sonde, held before its exec.
type Child struct {
	Cmd     *exec.Cmd
	release *os.File
	once    sync.Once
	done    chan struct{}
	waitErr error
	exited  time.Time // when Wait returned (set before done is closed)
}

// StartChild starts CMD held before its exec: the caller opens its events
// on Cmd.Process.Pid, then calls Go.
func StartChild(args []string) (*Child, error) {
	if _, err := exec.LookPath(args[0]); err != nil {
		return nil, fmt.Errorf("command not found: %s", args[0])
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding sonde's own binary: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the pipe that holds %s: %w", args[0], err)
	}
	rr, rw, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("making the pipe that holds %s: %w", args[0], err)
	}
	cmd := exec.Command(self, append([]string{ChildArg}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r, rw}
	// Die with sonde: a crashed recorder must not leave the command held.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	r.Close()
	rw.Close()
	if err != nil {
		w.Close()
		rr.Close()
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	c := &Child{Cmd: cmd, release: w, done: make(chan struct{})}
	// Wait until the child has done its own start-up (EOF: it died).
	var b [1]byte
	n, _ := rr.Read(b[:])
	rr.Close()
	if n != 1 {
		c.Abort()
		return nil, fmt.Errorf("starting %s: the held child exited before it was ready", args[0])
	}
	return c, nil
}

// Go lets the child exec its command.
func (c *Child) Go() error {
	_, err := c.release.Write([]byte{1})
	c.release.Close()
	if err != nil {
		return fmt.Errorf("releasing the command: %w", err)
	}
	return nil
}

// Abort kills a child that was never released.
func (c *Child) Abort() {
	c.release.Close()
	c.Cmd.Process.Kill()
	c.Cmd.Wait()
}

// Done is closed when the command has exited. It waits for the command in
// the background; use either Done/End or Cmd.Wait (Run's Target), not both.
func (c *Child) Done() <-chan struct{} {
	c.once.Do(func() {
		go func() {
			c.waitErr = c.Cmd.Wait()
			c.exited = time.Now()
			close(c.done)
		}()
	})
	return c.done
}

// ExitedAt is when the command was seen to exit, once Done is closed
// (zero before): the end of what its events could count.
func (c *Child) ExitedAt() time.Time {
	select {
	case <-c.Done():
		return c.exited
	default:
		return time.Time{}
	}
}

// EndGrace is how long End waits for the command after asking it to stop,
// before it kills it.
const EndGrace = 5 * time.Second

// End finishes the command when a run ends for reason r and returns its
// exit code, shell style. A command that is still running when the run
// ends otherwise (duration, signal, cancel) gets SIGTERM, as perf does;
// it is killed if it is still there EndGrace later.
func (c *Child) End(r Reason) int {
	done := c.Done()
	if r != Done {
		select {
		case <-done:
		default:
			c.Cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	select {
	case <-done:
	case <-time.After(EndGrace):
		c.Cmd.Process.Kill()
		<-done
	}
	return ExitCode(c.waitErr, c.Cmd.ProcessState)
}
