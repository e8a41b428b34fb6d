package stream

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestRoundTrip(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			out := exchange(t, network, "line one\nline two\n", "line two")
			if !strings.Contains(out, "] line one") || !strings.Contains(out, "] line two") {
				t.Errorf("got %q", out)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"udp://", "http://x:1", "udp://host", "nonsense"} {
		if _, _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\twith tab", "plain text\twith tab"},
		{"héllo, 世界", "héllo, 世界"},
		{"\x1b[2J\x1b[Hfake", `\x1b[2J\x1b[Hfake`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"bar\rfoo", `bar\x0dfoo`},
		{"del\x7f nul\x00", `del\x7f nul\x00`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"raw \x9b31m", `raw \x9b31m`},
		{"cut \xe4\xb8", `cut \xe4\xb8`},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestListenEscapes sends escape sequences over both transports and checks
// that none reaches the output raw.
func TestListenEscapes(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			got := exchange(t, network, "\x1b[2J\x1b]0;pwned\x07 \u009b1m done\n", "done")
			if !strings.Contains(got, `] \x1b[2J\x1b]0;pwned\x07 \u009b1m done`) {
				t.Errorf("got %q", got)
			}
			for _, r := range strings.TrimSuffix(got, "\n") {
				if r < 0x20 || (r >= 0x7f && r < 0xa0) {
					t.Errorf("control character %U reached the output: %q", r, got)
				}
			}
		})
	}
}

// exchange sends payload to a listener over network and returns what the
// listener printed once until shows up (or 3 s passed).
func exchange(t *testing.T, network, payload, until string) string {
	t.Helper()
	var out syncBuf
	stop := make(chan struct{})
	addrs := make(chan net.Addr, 1)
	go Listen(network+"://127.0.0.1:0", &out, stop, func(a net.Addr) { addrs <- a })
	a := <-addrs
	s, err := Dial(network + "://" + a.String())
	if err != nil {
		t.Fatal(err)
	}
	s.Send([]byte(payload))
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(out.String(), until) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	s.Close()
	return out.String()
}
