// Package testutil holds helpers shared by sonde's tests: the privilege
// gate, compiling C workloads, and running the sonde binary.
package testutil

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// RequirePrivileged skips a test that needs root (perf events, BPF,
// kallsyms) when run unprivileged, and fails it instead when
// SONDE_REQUIRE_PRIVILEGED=1 (as in CI), where every test must run for real.
func RequirePrivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("SONDE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("test needs root but runs as uid %d with SONDE_REQUIRE_PRIVILEGED=1", os.Geteuid())
	}
	t.Skip("needs root (perf_event_open system-wide, kallsyms); run as root or set SONDE_REQUIRE_PRIVILEGED=1 in CI")
}

// HaveTool finds an outside program a test can do without.
func HaveTool(name string) (string, bool) {
	p, err := exec.LookPath(name)
	return p, err == nil
}

// RequireTool skips (or fails under SONDE_REQUIRE_PRIVILEGED=1) when an
// external program the test compares against is missing.
func RequireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("SONDE_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("%s not found: install Debian's %s (.ci/run does)", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s", name, pkg)
	return ""
}

// RepoRoot finds the module root from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BuildC compiles testdata sources into dir/out with frame pointers and
// debug info; extra flags follow the sources.
func BuildC(t testing.TB, dir, out string, srcs []string, extra ...string) string {
	t.Helper()
	RequireTool(t, "gcc", "gcc")
	dst := filepath.Join(dir, out)
	args := []string{"-O1", "-g", "-fno-omit-frame-pointer", "-o", dst}
	for _, s := range srcs {
		if !filepath.IsAbs(s) {
			s = filepath.Join(RepoRoot(), "testdata", s)
		}
		args = append(args, s)
	}
	args = append(args, extra...)
	cmd := exec.Command("gcc", args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return dst
}

// PackageC is a C source of the testdata/ folder of the package under
// test (go test runs a package's tests in its folder), for BuildC, which
// finds other relative names in the repository's testdata/.
func PackageC(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name)) // fails only without a working directory
	return p
}

// CompileC writes the C program text to dir/out.c and compiles it with
// exactly flags (no defaults, unlike BuildC) into dir/out.
func CompileC(t testing.TB, dir, out, text string, flags ...string) string {
	t.Helper()
	RequireTool(t, "gcc", "gcc")
	src := filepath.Join(dir, out+".c")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, out)
	if b, err := exec.Command("gcc", append(append([]string{}, flags...), "-o", bin, src)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v %s: %v\n%s", flags, src, err, b)
	}
	return bin
}

// BuildGo builds the Go program in testdata/src (a package, or a module
// of its own) into dir/out.
func BuildGo(t testing.TB, dir, out, src string) string {
	t.Helper()
	return BuildGoFor(t, dir, out, src, runtime.GOARCH)
}

// BuildGoFor is BuildGo for the architecture goarch (GOARCH's names).
func BuildGoFor(t testing.TB, dir, out, src, goarch string) string {
	t.Helper()
	return goBuild(t, dir, out, filepath.Join("testdata", src), "GOARCH="+goarch)
}

// BuildGoLinked builds the Go program in the repository's folder pkg
// (e.g. cmd/sonde, testdata/goprog) into dir/out as a release is built,
// with -trimpath and these linker flags ("-s -w": no symbol table, no
// DWARF).
func BuildGoLinked(t testing.TB, dir, out, pkg, ldflags string) string {
	t.Helper()
	return goBuild(t, dir, out, pkg, "", "-trimpath", "-ldflags="+ldflags)
}

// goBuild runs go build without cgo in the repository's folder pkg into
// dir/out, with env ("" for none) added to the test's environment.
func goBuild(t testing.TB, dir, out, pkg, env string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, out)
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
	cmd.Dir = filepath.Join(RepoRoot(), pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, b)
	}
	return bin
}

var (
	sondeOnce sync.Once
	sondePath string
	sondeErr  error
	sondeOut  []byte
)

// Sonde builds the sonde binary once per test process and returns its path.
func Sonde(t testing.TB) string {
	t.Helper()
	sondeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sonde-bin")
		if err != nil {
			sondeErr = err
			return
		}
		sondePath = filepath.Join(dir, "sonde")
		cmd := exec.Command("go", "build", "-o", sondePath, "./cmd/sonde")
		cmd.Dir = RepoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		sondeOut, sondeErr = cmd.CombinedOutput()
	})
	if sondeErr != nil {
		t.Fatalf("building sonde: %v\n%s", sondeErr, sondeOut)
	}
	return sondePath
}

// Result of one sonde run.
type Result struct {
	Args           []string // sonde's arguments
	Stdout, Stderr string
	Code           int
}

// JSON decodes the run's standard output into v; the test fails, showing
// the output, when it is not that JSON.
func (r Result) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("sonde %s: decoding its JSON output: %v\n%.2000s", strings.Join(r.Args, " "), err, r.Stdout)
	}
}

// Run runs sonde with args in dir.
func Run(t testing.TB, dir string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(Sonde(t), args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			t.Fatalf("running sonde %v: %v", args, err)
		}
	}
	return Result{Args: args, Stdout: o.String(), Stderr: e.String(), Code: code}
}

// MustRun runs sonde and fails the test on a non-zero exit.
func MustRun(t testing.TB, dir string, args ...string) Result {
	t.Helper()
	r := Run(t, dir, args...)
	if r.Code != 0 {
		t.Fatalf("sonde %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// PerfEventsUsable reports whether perf_event_open works at all here.
func PerfEventsUsable() bool {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// Workload is the start of most end-to-end tests: it skips (or fails)
// without privileges, then builds testdata's srcs into out in a fresh
// temporary directory, and returns the directory and the binary.
func Workload(t testing.TB, out string, srcs []string, extra ...string) (dir, bin string) {
	t.Helper()
	RequirePrivileged(t)
	dir = t.TempDir()
	return dir, BuildC(t, dir, out, srcs, extra...)
}

// GoWorkload is Workload for a Go program of testdata (see BuildGo).
func GoWorkload(t testing.TB, out, src string) (dir, bin string) {
	t.Helper()
	RequirePrivileged(t)
	dir = t.TempDir()
	return dir, BuildGo(t, dir, out, src)
}
