package testutil

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"testing"
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
