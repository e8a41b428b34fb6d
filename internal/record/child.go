package record

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/sonde-dev/sonde/internal/runctl"
)

// ChildArg is the hidden first argument with which sonde re-executes itself
// as the waiting child of `sonde record -- CMD`: it blocks on a pipe until
// the events are open, then execs CMD. Counting starts at that exec
// (enable_on_exec), so none of sonde's own work is measured.
const ChildArg = "__sonde_exec_child"

// RunChild is the child side; it never returns on success. The caller must
// run on the main OS thread (runtime.LockOSThread in init), because the
// events are attached to the thread whose id is the pid.
func RunChild(args []string) {
	go1 := os.NewFile(3, "sonde-sync")
	var b [1]byte
	n, _ := go1.Read(b[:])
	if n != 1 {
		os.Exit(127) // the parent gave up before releasing us
	}
	go1.Close()
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sonde: %s: command not found\n", args[0])
		os.Exit(127)
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "sonde: exec %s: %v\n", args[0], err)
	os.Exit(126)
}

// Child is a command started under sonde, held before exec.
type Child struct {
	Cmd     *exec.Cmd
	release *os.File
}

// StartChild starts CMD held before its exec.
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
		return nil, err
	}
	cmd := exec.Command(self, append([]string{ChildArg}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	// Die with sonde: a crashed recorder must not leave the command held.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	r.Close()
	return &Child{Cmd: cmd, release: w}, nil
}

// Go lets the child exec its command.
func (c *Child) Go() error {
	_, err := c.release.Write([]byte{1})
	c.release.Close()
	return err
}

// Abort kills a child that was never released.
func (c *Child) Abort() {
	c.release.Close()
	c.Cmd.Process.Kill()
	c.Cmd.Wait()
}

// ExitCode turns a Wait result into a shell-style exit code.
func ExitCode(err error, state *os.ProcessState) int { return runctl.ExitCode(err, state) }
