package execsnoop_test

import (
	"bufio"
	"io"
	"strings"
	"sync"
	"time"
)

// lines collects a tool's output lines that name the test's nonce, as
// they come.
type lines struct {
	mu   sync.Mutex
	l    []string
	done chan struct{}
}

func collect(r io.Reader, nonce string) *lines {
	l := &lines{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), nonce) {
				l.mu.Lock()
				l.l = append(l.l, sc.Text())
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// waitFor waits until a line holds one of marks (the tool printed it);
// false after 30 s.
func (l *lines) waitFor(marks ...string) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range l.all() {
			for _, m := range marks {
				if strings.Contains(line, m) {
					return true
				}
			}
		}
	}
	return false
}

// all returns the lines read so far.
func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}
