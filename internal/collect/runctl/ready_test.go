package runctl

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// notify speaks sd_notify's datagram to a path and to an abstract name,
// and ignores what it cannot reach.
func TestNotify(t *testing.T) {
	if os.Getenv("NOTIFY_SOCKET") != "" {
		t.Errorf("NOTIFY_SOCKET is still in the environment: commands sonde starts would inherit it")
	}
	path := filepath.Join(t.TempDir(), "n")
	for _, name := range []string{path, "@sonde-test-notify"} {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		notify(name, "READY=1")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 64)
		n, err := c.Read(b)
		c.Close()
		if err != nil || string(b[:n]) != "READY=1" {
			t.Errorf("%s: got %q, %v", name, b[:n], err)
		}
	}
	notify(filepath.Join(t.TempDir(), "none"), "READY=1") // no listener: no error, no hang
	notify("vsock:2:1", "READY=1")
}
