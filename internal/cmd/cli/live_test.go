package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/view/emit"
)

func TestPidTarget(t *testing.T) {
	if got, err := PidTarget(0); err != nil || got != "system wide" {
		t.Errorf("no -p: %q, %v", got, err)
	}
	if got, err := PidTarget(os.Getpid()); err != nil || !strings.Contains(got, "process id") {
		t.Errorf("own pid: %q, %v", got, err)
	}
	if _, err := PidTarget(999999999); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Errorf("missing pid: %v", err)
	}
	// A thread id: these tools filter processes; the error names the
	// process to give instead, as record's and stat's pid check does.
	tid := make(chan int)
	go func() {
		runtime.LockOSThread()
		tid <- unix.Gettid()
		<-tid
	}()
	id := <-tid
	defer func() { tid <- 0 }()
	if id == os.Getpid() {
		t.Skip("the goroutine runs on the main thread")
	}
	_, err := PidTarget(id)
	if err == nil || !strings.Contains(err.Error(), "is a thread") || !strings.Contains(err.Error(), "-p "+strconv.Itoa(os.Getpid())) {
		t.Errorf("thread %d: %v", id, err)
	}
}

type finalReport struct{ N int }

func (r finalReport) WriteText(w io.Writer)       { fmt.Fprintf(w, "%d things\n", r.N) }
func (r finalReport) WriteJSON(w io.Writer) error { return jsonout.Write(w, map[string]int{"n": r.N}) }

// -o FILE (ReportFile): the final report goes to the file, as text or as
// JSON; -o - and no -o write it where W writes.
func TestLiveReportFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "why.txt")
	for _, c := range []struct {
		args      []string
		file, std string
	}{
		{[]string{"-o", path}, "3 things\n", ""},
		{[]string{"-o", path, "--json"}, "{\n  \"n\": 3\n}\n", ""},
		{[]string{"-o", "-"}, "", "3 things\n"},
		{nil, "", "3 things\n"},
	} {
		os.Remove(path)
		l := &Live{ReportFile: true}
		cmd := l.Command(&cobra.Command{Use: "x"}, "")
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		var std bytes.Buffer
		l.W = emit.New(&std, l.JSON)
		if err := l.Final(finalReport{3}); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != c.file || std.String() != c.std {
			t.Errorf("%v: file %q, standard output %q; want %q, %q", c.args, got, std.String(), c.file, c.std)
		}
	}
	l := &Live{ReportFile: true}
	cmd := l.Command(&cobra.Command{Use: "x"}, "")
	cmd.ParseFlags([]string{"-o", filepath.Join(path, "no", "such")})
	if _, _, _, err := l.Start(cmd, nil, ""); err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("-o into a missing directory: %v", err)
	}
}
