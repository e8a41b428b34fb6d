package cli

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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
