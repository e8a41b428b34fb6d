package procfs

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStatus(t *testing.T) {
	st, err := ParseStatus(strings.NewReader("Name:\tsleep\nUmask:\t0022\nState:\tZ (zombie)\nTgid:\t42\nNgid:\t0\nPid:\t43\n"))
	if err != nil || st.Name != "sleep" || st.State != 'Z' || st.Tgid != 42 || st.Pid != 43 {
		t.Errorf("ParseStatus = %+v, %v", st, err)
	}
	if _, err := ParseStatus(strings.NewReader("garbage")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestCheckPid(t *testing.T) {
	if err := CheckPid(os.Getpid()); err != nil {
		t.Errorf("own pid: %v", err)
	}
	if err := CheckPid(0); err == nil {
		t.Error("pid 0 accepted")
	}
	if err := CheckPid(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("missing pid: %v", err)
	}
	// A child that exited and is not yet reaped is a zombie.
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = CheckPid(pid); errors.Is(err, ErrZombie) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, ErrZombie) || !strings.Contains(err.Error(), "true") {
		t.Errorf("zombie: %v", err)
	}
	cmd.Wait()
}
