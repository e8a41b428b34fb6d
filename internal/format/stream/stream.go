// Package stream sends interval reports to another machine and receives
// them: udp:// (one datagram per report, readable with `nc -lu PORT`) or
// tcp:// (a line stream, readable with `nc -l PORT`), as seed 002 sent its
// per-second top 10 to a developer's machine.
package stream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// maxDatagram keeps a report in one UDP datagram on loopback and most LANs
// with fragmentation; longer reports are cut with a marker.
const maxDatagram = 60000

// Parse validates udp://HOST:PORT or tcp://HOST:PORT.
func Parse(s string) (network, addr string, err error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "udp" && u.Scheme != "tcp") || u.Host == "" {
		return "", "", fmt.Errorf("bad stream address %q: want udp://HOST:PORT or tcp://HOST:PORT", s)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", "", fmt.Errorf("bad stream address %q: %v", s, err)
	}
	return u.Scheme, u.Host, nil
}

// Sender writes reports to a destination.
type Sender struct {
	network, addr string
	conn          net.Conn
}

// Dial connects (TCP) or prepares (UDP) the destination.
func Dial(dest string) (*Sender, error) {
	network, addr, err := Parse(dest)
	if err != nil {
		return nil, err
	}
	s := &Sender{network: network, addr: addr}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sender) connect() error {
	c, err := net.DialTimeout(s.network, s.addr, 3*time.Second)
	if err != nil {
		return fmt.Errorf("connecting to %s://%s: %w", s.network, s.addr, err)
	}
	s.conn = c
	return nil
}

// Send writes one report; TCP reconnects once if the listener went away.
func (s *Sender) Send(report []byte) error {
	if s.network == "udp" && len(report) > maxDatagram {
		report = append(report[:maxDatagram-20:maxDatagram-20], []byte("\n[report cut]\n")...)
	}
	if _, err := s.conn.Write(report); err != nil {
		if s.network == "tcp" {
			s.conn.Close()
			if err := s.connect(); err != nil {
				return err
			}
			_, err = s.conn.Write(report)
			return err
		}
		return err
	}
	return nil
}

// Close closes the connection.
func (s *Sender) Close() error { return s.conn.Close() }

// Sanitize makes a received line safe to print on a terminal: anyone who
// can reach the port can send text, and escape sequences (ESC, CSI and the
// other control characters, raw or as C1 code points) could move the
// cursor, rewrite earlier lines, retitle the window or worse. Each control
// character other than tab, and each byte that is not valid UTF-8, becomes
// a visible escape: \x1b, \x0d, \u009b. Newlines never reach here (lines
// are split on them). Text without such characters is returned unchanged.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Listen receives reports on addr and writes each line to w prefixed with
// the sender ([host] line), control characters made visible (Sanitize). It
// returns when stop is closed.
func Listen(listen string, w io.Writer, stop <-chan struct{}, ready func(net.Addr)) error {
	network, addr, err := Parse(listen)
	if err != nil {
		return err
	}
	lines := make(chan string, 1024)
	var (
		c     io.Closer
		local net.Addr
		serve func() // receives until c is closed
	)
	if network == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", listen, err)
		}
		c, local, serve = pc, pc.LocalAddr(), func() { readDatagrams(pc, lines) }
	} else {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", listen, err)
		}
		c, local, serve = ln, ln.Addr(), func() { acceptStreams(ln, lines) }
	}
	defer c.Close()
	if ready != nil {
		ready(local)
	}
	runctl.Ready()
	done := make(chan error, 1)
	go func() { serve(); done <- nil }()
	go func() { <-stop; c.Close() }()
	for {
		select {
		case l := <-lines:
			if _, err := fmt.Fprintln(w, l); err != nil {
				return err
			}
			if f, ok := w.(interface{ Sync() error }); ok {
				f.Sync()
			}
		case err := <-done:
			return err
		}
	}
}

// readDatagrams sends each line of each datagram to lines, prefixed with
// its sender, until pc is closed.
func readDatagrams(pc net.PacketConn, lines chan<- string) {
	buf := make([]byte, 65536)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		host := from.String()
		for _, l := range strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n") {
			lines <- fmt.Sprintf("[%s] %s", host, Sanitize(l))
		}
	}
}

// acceptStreams sends each line of each connection to lines, prefixed
// with its sender, until ln is closed.
func acceptStreams(ln net.Listener, lines chan<- string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			host := c.RemoteAddr().String()
			sc := bufio.NewScanner(c)
			sc.Buffer(make([]byte, 65536), 1<<20)
			for sc.Scan() {
				lines <- fmt.Sprintf("[%s] %s", host, Sanitize(sc.Text()))
			}
		}(c)
	}
}
