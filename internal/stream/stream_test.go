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
			var out syncBuf
			stop := make(chan struct{})
			addrs := make(chan net.Addr, 1)
			go Listen(network+"://127.0.0.1:0", &out, stop, func(a net.Addr) { addrs <- a })
			a := <-addrs
			s, err := Dial(network + "://" + a.String())
			if err != nil {
				t.Fatal(err)
			}
			s.Send([]byte("line one\nline two\n"))
			deadline := time.Now().Add(3 * time.Second)
			for !strings.Contains(out.String(), "line two") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			close(stop)
			s.Close()
			if !strings.Contains(out.String(), "] line one") || !strings.Contains(out.String(), "] line two") {
				t.Errorf("got %q", out.String())
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
