package testutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Perf runs Debian's perf for a test: in Dir, with HOME=Home, so that
// the build-id cache perf record fills ($HOME/.debug) and perf report
// reads is the test's own and not the user's.
type Perf struct {
	Bin, Dir, Home string
}

// NewPerf finds perf (see RequireTool) and runs it in dir with its
// build-id cache under home.
func NewPerf(t testing.TB, dir, home string) *Perf {
	t.Helper()
	return &Perf{Bin: RequireTool(t, "perf", "linux-perf"), Dir: dir, Home: home}
}

// Cmd is perf with args, not started: for a perf the test stops itself
// or whose failure it reads.
func (p *Perf) Cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(p.Bin, args...)
	cmd.Dir, cmd.Env = p.Dir, append(os.Environ(), "HOME="+p.Home)
	return cmd
}

// Run runs perf with args and returns its standard output, or writes it
// to stdout when that is not nil (a pipe-format recording); the test
// fails with perf's standard error when perf does not succeed.
func (p *Perf) Run(t testing.TB, stdout io.Writer, args ...string) []byte {
	t.Helper()
	cmd := p.Cmd(args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("perf %v: %v\n%s", args, err, stderr.String())
	}
	return out.Bytes()
}

// PerfControl makes cmd (perf stat or perf record, not yet started)
// start with its events disabled, under perf's --control protocol, and
// returns enable: it enables them and returns once perf acknowledges, so
// a test starts its workload when perf counts, not after a guessed sleep.
func PerfControl(t testing.TB, cmd *exec.Cmd) (enable func()) {
	t.Helper()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctlW.Close(); ackR.Close() })
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, ctlR, ackW)
	ctl := []string{"-D", "-1", "--control", fmt.Sprintf("fd:%d,%d", fd, fd+1)}
	cmd.Args = append(append(append([]string{}, cmd.Args[:2]...), ctl...), cmd.Args[2:]...)
	return func() {
		t.Helper()
		// perf has them now; the test's copies would keep the pipes open
		// past perf's exit.
		ctlR.Close()
		ackW.Close()
		if _, err := ctlW.Write([]byte("enable\n")); err != nil {
			t.Fatalf("enabling perf's events: %v", err)
		}
		ack := make(chan string, 1)
		go func() {
			b := make([]byte, 16)
			n, _ := ackR.Read(b)
			ack <- string(b[:n])
		}()
		select {
		case a := <-ack:
			if !strings.HasPrefix(a, "ack") {
				t.Fatalf("perf did not acknowledge enable (%q)", a)
			}
		case <-time.After(ReadyTimeout):
			t.Fatalf("perf did not acknowledge enable within %v", ReadyTimeout)
		}
	}
}
