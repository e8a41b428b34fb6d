package tcplife_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/tcplife"
)

// exchange makes one loopback session on network ("tcp4", "tcp6"): the
// client sends up bytes, the server answers down bytes and closes first,
// then the client. It returns the client's and the server's ports and how
// long the test saw it last.
func exchange(t *testing.T, network, addr string, up, down int) (client, server uint16, life time.Duration) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	defer ln.Close()
	t0 := time.Now()
	errs := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		defer c.Close()
		if _, err := io.ReadFull(c, make([]byte, up)); err != nil {
			errs <- err
			return
		}
		_, err = c.Write(bytes.Repeat([]byte{'d'}, down))
		errs <- err
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(bytes.Repeat([]byte{'u'}, up)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c) // until the server's FIN
	if err != nil || len(got) != down {
		t.Fatalf("client read %d bytes (%v), want %d", len(got), err, down)
	}
	c.Close()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	return uint16(c.LocalAddr().(*net.TCPAddr).Port), uint16(ln.Addr().(*net.TCPAddr).Port), time.Since(t0)
}

// TestTcplifeLoopbackBytes: a loopback session (IPv4, and IPv6 where the
// host has ::1) is reported once from each end, with the test's process,
// its ports, exactly the bytes the test sent each way, and a duration
// within what the test measured.
func TestTcplifeLoopbackBytes(t *testing.T) {
	testutil.RequirePrivileged(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Collect(func(out func(tcplife.Session)) (*tcplife.Result, error) {
		return tcplife.Run(ctx, tcplife.Options{Pid: os.Getpid()}, out)
	})
	testutil.WaitBPFLinks(t, os.Getpid(), 1, 30*time.Second)

	type want struct {
		family       int
		addr         string
		lport, rport uint16
		tx, rx       uint64
		life         time.Duration
	}
	var wants []want
	cases := []struct {
		network, addr    string
		family, up, down int
	}{{"tcp4", "127.0.0.1:0", 4, 123457, 54321}, {"tcp6", "[::1]:0", 6, 7, 300001}}
	for _, c := range cases {
		if c.family == 6 {
			if l, err := net.Listen("tcp6", c.addr); err != nil {
				t.Logf("no IPv6 loopback (%v): IPv4 only", err)
				continue
			} else {
				l.Close()
			}
		}
		cl, sv, life := exchange(t, c.network, c.addr, c.up, c.down)
		host := "127.0.0.1"
		if c.family == 6 {
			host = "::1"
		}
		wants = append(wants,
			want{c.family, host, cl, sv, uint64(c.up), uint64(c.down), life},
			want{c.family, host, sv, cl, uint64(c.down), uint64(c.up), life})
	}
	find := func(w want) (tcplife.Session, int) {
		var s tcplife.Session
		n := 0
		for _, g := range run.All() {
			if g.LPort == w.lport && g.RPort == w.rport {
				s = g
				n++
			}
		}
		return s, n
	}
	testutil.WaitFor(t, 30*time.Second, "every end of the test's sessions to be reported", func() bool {
		for _, w := range wants {
			if _, n := find(w); n == 0 {
				return false
			}
		}
		return true
	})
	cancel()
	res := run.Wait(t)
	got := run.All()
	for _, w := range wants {
		s, n := find(w)
		if n != 1 || s.Pid != uint32(os.Getpid()) || s.Family != w.family || s.LAddr != w.addr || s.RAddr != w.addr ||
			s.TxBytes != w.tx || s.RxBytes != w.rx || s.DurationNS == 0 || time.Duration(s.DurationNS) > w.life {
			t.Errorf("session %d→%d reported %d times: %+v; want pid %d, %s, tx %d rx %d, a duration within %v",
				w.lport, w.rport, n, s, os.Getpid(), w.addr, w.tx, w.rx, w.life)
		}
	}
	if c := res.Counts; c.LostRing+c.LostMap != 0 {
		t.Errorf("lost: %+v", c)
	}
	t.Logf("%d sessions reported: %+v", len(got), got)
}
