package symbolize

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/symbolize/debuginfod"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, b)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(to), 0o755)
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSeparateDebugFiles: a stripped binary is named from each place a
// distribution or a server keeps its symbols, and not from a debug file
// of another build that only shares its debuglink name.
func TestSeparateDebugFiles(t *testing.T) {
	for _, tool := range []string{"objcopy", "strip", "xz", "nm"} {
		testutil.RequireTool(t, tool, "binutils")
	}
	dir := t.TempDir()
	full := testutil.BuildC(t, dir, "work", []string{"work.c"})
	want := symAddr(t, full, "spin_a")
	dbg := filepath.Join(dir, "work.debug")
	run(t, "objcopy", "--only-keep-debug", full, dbg)
	stripped := filepath.Join(dir, "stripped")
	run(t, "strip", "-s", "-o", stripped, full)
	other := testutil.BuildC(t, t.TempDir(), "work", []string{"work.c"}, "-DOTHER_BUILD=1", "-O0")
	otherDbg := filepath.Join(dir, "other.debug")
	run(t, "objcopy", "--only-keep-debug", other, otherDbg)
	id := func() string {
		e, err := OpenELF(full, Options{NoLines: true})
		if err != nil {
			t.Fatal(err)
		}
		return e.BuildID
	}()

	type setup func(t *testing.T, c string) (bin string, o Options)
	cases := []struct {
		name  string
		setup setup
		named bool
		lines bool
	}{
		{"stripped alone", func(t *testing.T, c string) (string, Options) {
			return stripped, Options{DebugDir: c}
		}, false, false},
		{"build-id directory", func(t *testing.T, c string) (string, Options) {
			copyFile(t, dbg, filepath.Join(c, ".build-id", id[:2], id[2:]+".debug"))
			return stripped, Options{DebugDir: c}
		}, true, true},
		{"debuglink beside it", func(t *testing.T, c string) (string, Options) {
			copyFile(t, dbg, filepath.Join(c, "prog.debug"))
			bin := filepath.Join(c, "prog")
			run(t, "objcopy", "--add-gnu-debuglink="+filepath.Join(c, "prog.debug"), stripped, bin)
			return bin, Options{DebugDir: filepath.Join(c, "none")}
		}, true, true},
		{"debuglink to another build (CRC differs)", func(t *testing.T, c string) (string, Options) {
			copyFile(t, dbg, filepath.Join(c, "prog.debug"))
			bin := filepath.Join(c, "prog")
			run(t, "objcopy", "--add-gnu-debuglink="+filepath.Join(c, "prog.debug"), stripped, bin)
			copyFile(t, otherDbg, filepath.Join(c, "prog.debug"))
			return bin, Options{DebugDir: filepath.Join(c, "none")}
		}, false, false},
		{"MiniDebugInfo", func(t *testing.T, c string) (string, Options) {
			mini := filepath.Join(c, "mini")
			run(t, "objcopy", "--only-keep-debug", "-R", ".debug_info", "-R", ".debug_line", full, mini)
			run(t, "xz", "-k", mini)
			bin := filepath.Join(c, "prog")
			run(t, "objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", stripped, bin)
			return bin, Options{DebugDir: filepath.Join(c, "none")}
		}, true, false},
		{"debuginfod", func(t *testing.T, c string) (string, Options) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/buildid/"+id+"/debuginfo" {
					http.NotFound(w, r)
					return
				}
				http.ServeFile(w, r, dbg)
			}))
			t.Cleanup(srv.Close)
			SetDebuginfod(&debuginfod.Client{URLs: []string{srv.URL}, CacheDir: filepath.Join(c, "cache")})
			t.Cleanup(func() { SetDebuginfod(nil) })
			return stripped, Options{DebugDir: filepath.Join(c, "none")}
		}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin, o := tc.setup(t, t.TempDir())
			e, err := OpenELF(bin, o)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := e.Lookup(want + 4)
			if named := ok && f.Func == "spin_a"; named != tc.named {
				t.Fatalf("spin_a at %#x named %v (%+v), want %v", want, named, f, tc.named)
			}
			file, line, ok := e.Line(want + 4)
			if hasLine := ok && strings.HasSuffix(file, "work.c") && line > 0; hasLine != tc.lines {
				t.Fatalf("line of spin_a: %s:%d %v, want lines %v", file, line, ok, tc.lines)
			}
		})
	}
}
