package syscounts

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/tools/syscount"
)

func TestCommMergedPerSyscall(t *testing.T) {
	res := &syscount.Result{Elapsed: 1500 * time.Millisecond, Lost: 2, Rows: []syscount.Row{
		{Pid: 1, Comm: "a", Nr: 0, Name: "read", Count: 10, Errors: 1, TotalNS: 1000, MaxNS: 300},
		{Pid: 2, Comm: "b", Nr: 0, Name: "read", Count: 99},
		{Pid: 3, Comm: "a", Nr: 0, Name: "read", Count: 30, TotalNS: 5000, MaxNS: 900},
		{Pid: 3, Comm: "a", Nr: 1, Name: "write", Count: 50, TotalNS: 100, MaxNS: 10, AvgNS: 2},
	}}
	r := New(res, Options{Latency: true, Comm: "a"})
	if len(r.Syscalls) != 2 {
		t.Fatalf("rows %+v", r.Syscalls)
	}
	w, rd := r.Syscalls[0], r.Syscalls[1]
	if w.Name != "write" || rd.Name != "read" || rd.Count != 40 || rd.Errors != 1 || rd.TotalNS != 6000 || rd.MaxNS != 900 || rd.AvgNS != 150 || rd.Pid != 0 || rd.Comm != "" {
		t.Errorf("merged rows %+v", r.Syscalls)
	}
	var b bytes.Buffer
	r.WriteText(&b)
	want := "SYSCALL                     COUNT   ERRORS      TOTAL(us)      AVG(us)      MAX(us)\n" +
		"write                          50        0            0.1        0.002          0.0\n" +
		"read                           40        1            6.0        0.150          0.9\n" +
		"# 90 syscalls in 1.5s, 2 lost to a full map\n"
	if b.String() != want {
		t.Errorf("text:\n%q\nwant:\n%q", b.String(), want)
	}
	// Per process, the rows stay apart and show who made them.
	r = New(res, Options{PerProcess: true, Comm: "a", Top: 1})
	b.Reset()
	r.WriteText(&b)
	if len(r.Syscalls) != 3 || !strings.HasPrefix(b.String(), "PID      COMM             SYSCALL") || strings.Count(b.String(), "\n") != 3 {
		t.Errorf("per process:\n%s", b.String())
	}
}
