package host

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
)

// The kernel says the same through /proc/sys/kernel.
func TestFillAgreesWithProc(t *testing.T) {
	var m model.Meta
	Fill(&m)
	for _, c := range []struct{ file, got string }{
		{"/proc/sys/kernel/osrelease", m.Kernel},
		{"/proc/sys/kernel/hostname", m.Hostname},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Skipf("no %s: %v", c.file, err)
		}
		if want := strings.TrimSpace(string(b)); c.got != want {
			t.Errorf("%s: got %q, want %q", c.file, c.got, want)
		}
	}
	if m.Arch != runtime.GOARCH {
		t.Errorf("arch %q", m.Arch)
	}
}
