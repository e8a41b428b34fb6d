package testutil

import (
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// StartPiped starts cmd in the background with its stdout piped to the
// test, which reads the command's ready line there; cmd is killed when
// the test ends.
func StartPiped(t testing.TB, cmd *exec.Cmd) io.Reader {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return out
}

// SyncBuffer is an output of a command that the test reads while the
// command still writes it (exec copies into it from its own goroutine).
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
