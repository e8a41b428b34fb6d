package testutil

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// update is -update of every test binary that imports testutil: golden
// files and fuzz seed corpora are rewritten instead of compared.
var update = flag.Bool("update", false, "rewrite golden files and fuzz seed corpora")

// Golden compares got with the golden file at path, rewriting the file
// first under -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n%s", path, got)
	}
}

// WantErr checks the error of a table case that wants one containing
// want, or none when want is "": it fails the test otherwise, and reports
// whether an error was wanted (the case has nothing more to check).
func WantErr(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	return true
}

// SameLines reports whether got and want hold the same lines in any
// order; if not, it fails t ("what: ... differ from whose") and logs the
// first line that differs once both are sorted.
func SameLines(t testing.TB, what, whose string, got, want []string) bool {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if slices.Equal(g, w) {
		return true
	}
	t.Errorf("%s: lines differ from %s's (%d lines, %s %d)", what, whose, len(g), whose, len(w))
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			t.Logf("first difference:\n sonde   %s\n %-7s %s", a, whose, b)
			break
		}
	}
	return false
}

// Start starts bin with args in the background; it is killed when the
// test ends.
func Start(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// StartReady starts bin with args as Start does and waits for the line
// "ready" it prints once set up (the workloads of testdata that need time
// to start say so), failing the test on any other first line.
func StartReady(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s: said %q (%v), want ready", bin, line, err)
	}
	return cmd
}

// DirEntries lists dir's names, so a test sees a file left behind.
func DirEntries(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// DumpDOM loads url in headless Chromium (found by the caller, e.g. with
// RequireTool) with a profile under dir, lets its scripts run for 3 s of
// virtual time and returns the DOM they leave.
func DumpDOM(t testing.TB, chromium, dir, url string) string {
	t.Helper()
	out, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+filepath.Join(dir, "chrome-profile"), "--virtual-time-budget=3000", "--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("chromium %s: %v", url, err)
	}
	return string(out)
}

// Tool runs an outside program (a compiler, binutils, perf) and returns
// its standard output; the test fails with its standard error when it
// does not succeed.
func Tool(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := TryTool(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryTool runs an outside program a test can do without and returns its
// standard output; the error carries its standard error.
func TryTool(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %v: %w\n%s", name, args, err, stderr.Bytes())
	}
	return string(out), nil
}

// SameShares compares two breakdowns row by row, as percentages of their
// totals (gotTotal, wantTotal): rows under 0.5% in both are skipped, any
// other row more than 0.1 points apart fails t ("what: row ...: sonde%,
// whose%"). It returns how many rows were compared; none fails t too.
func SameShares[N int | uint64 | float64](t testing.TB, what, whose string, got map[string]N, gotTotal N, want map[string]uint64, wantTotal uint64) int {
	t.Helper()
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	compared := 0
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		g := 100 * float64(got[k]) / math.Max(float64(gotTotal), 1)
		w := 100 * float64(want[k]) / math.Max(float64(wantTotal), 1)
		if g < 0.5 && w < 0.5 {
			continue
		}
		compared++
		if math.Abs(g-w) > 0.1 {
			t.Errorf("%s: row %s: %.2f%%, %s %.2f%%", what, k, g, whose, w)
		}
	}
	if compared == 0 {
		t.Errorf("%s: no rows above 0.5%% to compare: sonde %v, %s %v", what, got, whose, want)
	}
	return compared
}

// WriteFuzzSeeds writes the seeds that seeds returns into
// testdata/fuzz/<fuzz> in the form go test reads its corpus from; without
// -update it skips (a package's TestWriteFuzzSeeds).
func WriteFuzzSeeds(t testing.TB, fuzz string, seeds func() map[string][]byte) {
	t.Helper()
	if !*update {
		t.Skipf("run with -update to rewrite testdata/fuzz/%s", fuzz)
	}
	dir := filepath.Join("testdata", "fuzz", fuzz)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range seeds() {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Text is a view's text form (its WriteText).
func Text(r interface{ WriteText(io.Writer) }) string {
	var b strings.Builder
	r.WriteText(&b)
	return b.String()
}

// DecodeView writes a view's JSON form (its WriteJSON), decodes it into v
// and returns the text, failing t on either error.
func DecodeView(t testing.TB, r interface{ WriteJSON(io.Writer) error }, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), v); err != nil {
		t.Fatalf("decoding %s: %v", b.Bytes(), err)
	}
	return b.String()
}

// AliasKey is a function's name as sonde's and perf's choices among its
// aliases compare: perf shows .symtab's version suffixes and prefers a
// global __poll to a weak poll; sonde shows neither.
func AliasKey(sym string) string {
	if i := strings.IndexByte(sym, '@'); i > 0 && sym[i:] != "@plt" {
		sym = sym[:i]
	}
	return strings.TrimLeft(sym, "_")
}
