package procfs

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "123456789 2000 17\n", want: 123456789},
		{in: "0 0 0", want: 0},
		{in: "", err: "want three numbers"},
		{in: "12 34\n", err: "want three numbers"},
		{in: "x 1 2\n", err: "bad run time"},
		{in: "-5 1 2\n", err: "bad run time"},
	} {
		got, err := ParseSchedstat(strings.NewReader(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestOnCPU reads this test's own threads: 30 ms of CPU that getrusage
// counts show in the process's sum, and every thread is among
// ThreadsOnCPU's.
func TestOnCPU(t *testing.T) {
	pid := os.Getpid()
	before, err := ProcessOnCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	used := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for u := used(); used()-u < 30*time.Millisecond; {
	}
	after, err := ProcessOnCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 20*time.Millisecond {
		t.Errorf("30 ms of CPU (getrusage) counted as %v", after-before)
	}
	main, err := OnCPU(pid, 0)
	if err != nil || main <= 0 || main > after {
		t.Errorf("main thread %v (%v), process %v", main, err, after)
	}
	// The threads are listed first: the runtime may start one at any time,
	// and a thread that exists before the walk of /proc is in it.
	tids, _ := Threads(pid)
	all := ThreadsOnCPU()
	for _, tid := range tids {
		if _, ok := all[tid]; !ok {
			t.Errorf("thread %d missing from ThreadsOnCPU (%d threads)", tid, len(all))
		}
	}
	if _, err := ProcessOnCPU(1 << 30); err == nil {
		t.Error("no error for a missing process")
	}
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add("123456789 2000 17\n")
	f.Add("1 2")
	f.Fuzz(func(t *testing.T, in string) {
		if d, err := ParseSchedstat(strings.NewReader(in)); err == nil && d < 0 {
			t.Fatalf("%q: negative %v", in, d)
		}
	})
}
