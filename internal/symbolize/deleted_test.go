package symbolize

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestELFFilesDeleted: a running binary whose directory was removed is
// opened through its process (/proc/PID/map_files as root, /proc/PID/exe
// otherwise) and keeps its build-id and its name without " (deleted)".
func TestELFFilesDeleted(t *testing.T) {
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	want, err := OpenELF(src, Options{})
	if err != nil {
		t.Skipf("sleep is not a readable ELF file: %v", err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(gone, "napper")
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	in.Close()
	out.Close()
	cmd := testutil.Start(t, bin, "30")
	pid := cmd.Process.Pid
	// Wait for the exec to be done: the mapping names the binary.
	for end := time.Now().Add(5 * time.Second); ; {
		if l, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); l == bin {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the copy never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	obj := MappedObject(uint32(pid), bin+" (deleted)", "")
	if obj.Kind != model.DSOUser {
		t.Fatalf("object %+v", obj)
	}
	if _, err := (ELFFiles{}).Open(Object{Kind: model.DSOUser, Path: bin + " (deleted)"}); err == nil {
		t.Fatal("opened a deleted file without its process")
	}
	o, err := ELFFiles{}.Open(obj)
	if err != nil {
		t.Fatalf("opening the deleted binary through its process: %v", err)
	}
	if o.BuildID != want.BuildID {
		t.Errorf("build-id %q, want the original's %q", o.BuildID, want.BuildID)
	}
	if e, ok := o.Symbols.(*ELF); !ok || e.Path != bin {
		t.Errorf("opened as %+v, want path %s", o.Symbols, bin)
	}
}
