package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// ReadyTimeout bounds the wait for a sonde's ready signal: a cold start
// beside a loaded machine (the verifier, unwind tables) stays well inside.
const ReadyTimeout = 60 * time.Second

// Notified is the readiness socket of one sonde a test starts: sonde
// sends READY=1 there ($NOTIFY_SOCKET, sd_notify's protocol) once its
// measurement has begun, so the test starts its workload then and not
// after a guessed sleep.
type Notified struct {
	conn *net.UnixConn
	cmd  *exec.Cmd
}

// NotifyReady gives cmd, not yet started, a readiness socket of its own.
func NotifyReady(t testing.TB, cmd *exec.Cmd) *Notified {
	t.Helper()
	// A short path of its own: a socket's path has at most 107 bytes,
	// which a test's TempDir under a long test name can pass.
	dir, err := os.MkdirTemp("", "sonde-ready")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+path)
	return &Notified{conn: conn, cmd: cmd}
}

// Wait waits for READY=1; it fails the test when the process ends first
// or ReadyTimeout passes.
func (n *Notified) Wait(t testing.TB) {
	t.Helper()
	if err := n.wait(ReadyTimeout); err != nil {
		t.Fatalf("%s: %v", strings.Join(n.cmd.Args, " "), err)
	}
}

func (n *Notified) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 256)
	for time.Now().Before(deadline) {
		n.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		m, err := n.conn.Read(buf)
		if err == nil {
			for _, l := range strings.Split(string(buf[:m]), "\n") {
				if l == "READY=1" {
					return nil
				}
			}
			continue
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return fmt.Errorf("reading the readiness socket: %w", err)
		}
		if n.cmd.Process != nil && gone(n.cmd.Process.Pid) {
			return errors.New("exited before it was ready")
		}
	}
	return fmt.Errorf("not ready within %v", timeout)
}

// gone says whether pid has exited: no such process, or a zombie (its
// parent, the test, has not reaped it yet).
func gone(pid int) bool {
	err := procfs.CheckPid(pid)
	return errors.Is(err, procfs.ErrNoProcess) || errors.Is(err, procfs.ErrZombie)
}
