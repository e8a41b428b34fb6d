package procfs

import (
	"os/exec"
	"strings"
	"testing"
)

// A dynamically linked program maps libc, named through its root.
func TestLibcOf(t *testing.T) {
	sh := exec.Command("sleep", "5")
	if err := sh.Start(); err != nil {
		t.Skip(err)
	}
	defer sh.Process.Kill()
	sys := SystemLibc()
	if sys == "" {
		t.Skip("no system libc")
	}
	for i := 0; i < 50; i++ { // the loader maps libc shortly after exec
		p, err := LibcOf(sh.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if p != "" {
			if !strings.HasPrefix(p, "/proc/") || !strings.Contains(p, "/libc") {
				t.Errorf("LibcOf(sleep) = %q, want /proc/PID/root/…/libc…", p)
			}
			return
		}
		exec.Command("true").Run()
	}
	t.Errorf("sleep maps no libc")
}
