package main

// End-to-end tests: they build sonde and C workloads with a known split of
// work, record them for real and check the reports against that ground truth.
// They need root; the Makefile runs packages one at a time (-p 1) so
// recordings never measure each other.

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

type jsonReport struct {
	Samples int `json:"samples"`
	Entries []struct {
		Keys     map[string]string `json:"keys"`
		SelfPct  float64           `json:"self_percent"`
		ChildPct float64           `json:"children_percent"`
		Kernel   bool              `json:"kernel"`
		Graph    *jsonNode         `json:"callgraph"`
	} `json:"entries"`
	Meta struct {
		Lost       uint64   `json:"lost"`
		Warnings   []string `json:"warnings"`
		UserStacks *struct {
			Total    uint64 `json:"stacks_total"`
			Complete uint64 `json:"stacks_complete"`
		} `json:"user_stacks"`
	} `json:"recording"`
}

type jsonNode struct {
	Name     string      `json:"name"`
	Percent  float64     `json:"percent"`
	Children []*jsonNode `json:"children"`
}

func reportJSON(t *testing.T, dir string, args ...string) jsonReport {
	t.Helper()
	r := testutil.MustRun(t, dir, append([]string{"report", "--json"}, args...)...)
	var rep jsonReport
	r.JSON(t, &rep)
	return rep
}

func selfPct(rep jsonReport, sym string) float64 {
	total := 0.0
	for _, e := range rep.Entries {
		if e.Keys["sym"] == sym {
			total += e.SelfPct
		}
	}
	return total
}

// checkSplit checks a:b is 75:25 within 3 points, and that the two
// functions are nearly all of the samples of the filtered report.
func checkSplit(t *testing.T, rep jsonReport, a, b string) {
	t.Helper()
	pa, pb := selfPct(rep, a), selfPct(rep, b)
	if pa+pb < 85 {
		t.Fatalf("%s+%s = %.1f%% of samples, want most of them (report: %+v)", a, b, pa+pb, rep.Entries)
	}
	share := 100 * pa / (pa + pb)
	if math.Abs(share-75) > 3 {
		t.Errorf("%s/%s split = %.1f/%.1f, want 75/25 within 3 points", a, b, share, 100-share)
	}
	t.Logf("%s %.2f%%  %s %.2f%%  (split %.1f/%.1f, %d samples)", a, pa, b, pb, share, 100-share, rep.Samples)
}

// reportHasChain reports whether the call graph of sym's entry in rep
// holds parent → sym.
func reportHasChain(rep jsonReport, parent, sym string) bool {
	for _, e := range rep.Entries {
		if e.Keys["sym"] == sym && hasChain(e.Graph, parent, sym) {
			return true
		}
	}
	return false
}

// hasChain reports whether a caller-ordered graph contains parent → child.
func hasChain(n *jsonNode, parent, child string) bool {
	if n == nil {
		return false
	}
	for _, c := range n.Children {
		if n.Name == parent && c.Name == child {
			return true
		}
		if hasChain(c, parent, child) {
			return true
		}
	}
	return false
}

func TestRecordSplit(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "4999", "-o", "work.data", "--", "./work", "600")
	rep := reportJSON(t, dir, "-i", "work.data", "--no-children", "--comm", "work")
	checkSplit(t, rep, "spin_a", "spin_b")
	if rep.Meta.Lost != 0 {
		t.Logf("lost %d samples", rep.Meta.Lost)
	}
	// Call chains: main → spin_a in the caller-ordered graph of spin_a.
	if !reportHasChain(rep, "main", "spin_a") {
		t.Errorf("no main → spin_a chain in the call graph")
	}
	// Children mode: main carries nearly everything.
	rep = reportJSON(t, dir, "-i", "work.data", "--children", "--comm", "work")
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "main" && e.ChildPct < 90 {
			t.Errorf("main children = %.1f%%, want > 90%%", e.ChildPct)
		}
	}
}

func TestRecordSharedLibrary(t *testing.T) {
	rename := []string{"-Dspin_a=lib_a", "-Dspin_b=lib_b"}
	dir, _ := testutil.Workload(t, "libspin.so", []string{"work.c"}, append(rename, "-DWORK_LIB", "-shared", "-fPIC")...)
	testutil.BuildC(t, dir, "libmain", []string{"work.c"}, append(rename, "-DWORK_MAIN", "-L"+dir, "-lspin", "-Wl,-rpath,"+dir)...)
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "4999", "-o", "lib.data", "--", "./libmain", "600")
	rep := reportJSON(t, dir, "-i", "lib.data", "--no-children", "--comm", "libmain")
	checkSplit(t, rep, "lib_a", "lib_b")
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "lib_a" && e.Keys["dso"] != "libspin.so" {
			t.Errorf("lib_a shown in %q, want libspin.so", e.Keys["dso"])
		}
	}
}

func TestRecordShortChildren(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	// Fifty children of about 20 ms each, started by a shell script.
	script := filepath.Join(dir, "short.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nfor i in $(seq 50); do ./work 12; done\n"), 0o755)
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "4999", "-o", "short.data", "--", "sh", "short.sh")
	rep := reportJSON(t, dir, "-i", "short.data", "--no-children", "--comm", "work")
	checkSplit(t, rep, "spin_a", "spin_b")
}

func TestRecordKernelFrames(t *testing.T) {
	dir, _ := testutil.Workload(t, "syscalls", []string{"syscalls.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "sys.data", "--", "./syscalls", "2000000")
	rep := reportJSON(t, dir, "-i", "sys.data", "--no-children", "--comm", "syscalls")
	kernel, named := 0.0, 0
	for _, e := range rep.Entries {
		if !e.Kernel {
			continue
		}
		kernel += e.SelfPct
		sym := e.Keys["sym"]
		if strings.Contains(sym, "+0x") {
			t.Errorf("kernel frame not named: %q", sym)
		}
		if regexp.MustCompile(`write|syscall`).MatchString(sym) {
			named++
		}
	}
	if kernel < 30 {
		t.Errorf("kernel share %.1f%%, want most of a write(2) loop", kernel)
	}
	if named == 0 {
		t.Errorf("no write/syscall kernel frames among %d entries", len(rep.Entries))
	}
}

func TestReportAfterBinaryDeleted(t *testing.T) {
	dir, bin := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "w.data", "--", "./work", "100")
	before := testutil.MustRun(t, dir, "report", "-i", "w.data").Stdout
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	after := testutil.MustRun(t, dir, "report", "-i", "w.data").Stdout
	if before != after {
		t.Errorf("report changed after deleting the binary:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(after, "spin_a") {
		t.Errorf("report lacks spin_a:\n%s", after)
	}
}

func TestRecordExitCodeAndErrors(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	r := testutil.Run(t, dir, "record", "-q", "-o", "x.data", "--", "sh", "-c", "exit 7")
	if r.Code != 7 {
		t.Errorf("exit code %d, want the command's 7 (stderr %q)", r.Code, r.Stderr)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown_event", []string{"record", "-e", "cpu-clok", "--", "true"}, "nearest: cpu-clock"},
		{"no_such_pid", []string{"record", "-p", "999999999"}, "no such process"},
		{"missing_command", []string{"record", "--", "/nonexistent/cmd"}, "command not found"},
		{"no_target", []string{"record"}, "nothing to record"},
		{"hardware_event", []string{"record", "-e", "cycles", "--", "true"}, ""},
		{"missing_file", []string{"report", "-i", "nope.data"}, "no such file"},
		{"bad_sort", []string{"report", "--sort", "bo-gus"}, "unknown sort key"},
		{"unknown_command", []string{"recrod"}, "did you mean record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testutil.Run(t, dir, c.args...)
			if c.name == "hardware_event" {
				// Works where there is a PMU; elsewhere one line naming the reason.
				if r.Code != 0 && !strings.Contains(r.Stderr, "PMU") {
					t.Errorf("hardware event failure without a reason: %q", r.Stderr)
				}
				return
			}
			if r.Code == 0 {
				t.Fatalf("exit 0, want failure")
			}
			if !strings.Contains(r.Stderr, c.want) {
				t.Errorf("stderr %q, want it to mention %q", r.Stderr, c.want)
			}
			if strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 || strings.Contains(r.Stderr, "panic") {
				t.Errorf("want one line, got %q", r.Stderr)
			}
		})
	}
}

func TestUnprivilegedError(t *testing.T) {
	testutil.RequirePrivileged(t)
	setpriv := testutil.RequireTool(t, "setpriv", "util-linux")
	b, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if v, _ := strconv.Atoi(strings.TrimSpace(string(b))); v < 1 {
		t.Skipf("perf_event_paranoid=%d lets everyone record system-wide", v)
	}
	dir := t.TempDir()
	// nobody must reach the binary and the output directory (t.TempDir's
	// parent is private to root).
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "sonde")
	data, _ := os.ReadFile(testutil.Sonde(t))
	os.WriteFile(bin, data, 0o755)
	nobody := func(args ...string) (string, error) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin}, args...)...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		return stderr.String(), err
	}
	out, err := nobody("record", "-a", "--duration", "1s", "-o", filepath.Join(dir, "x.data"))
	if err == nil {
		t.Fatalf("unprivileged system-wide record succeeded: %s", out)
	}
	if !strings.Contains(out, "CAP_PERFMON") || !strings.Contains(out, "perf_event_paranoid") {
		t.Errorf("error does not name the capability and sysctl: %s", out)
	}
	// Every BPF tool names what it lacks, before anything else fails
	// (RLIMIT_MEMLOCK, tracefs) and says something beside the point.
	for _, args := range [][]string{
		{"profile", "-d", "1"}, {"offcpu", "-d", "1"}, {"wakeup", "-d", "1"}, {"syscount", "-d", "1"},
		{"runqlat", "-d", "1"}, {"biolat", "-d", "1"}, {"biosnoop", "-d", "1"}, {"cputime", "-d", "1"},
		{"top", "-b", "1"}, {"funclat", "-d", "1", "vfs_read"},
		{"latency", "--start", "block:block_rq_issue", "--end", "block:block_rq_complete", "-d", "1"},
	} {
		out, err := nobody(args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%s: %v, want exit status 1: %s", args[0], err, out)
		}
		if !strings.Contains(out, "CAP_BPF") || !strings.Contains(out, "CAP_PERFMON") || strings.Contains(out, "memlock") ||
			strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("%s: want one line naming CAP_BPF and CAP_PERFMON, got %q", args[0], out)
		}
	}
}

func TestDataFileErrors(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	// The workload runs a set time past several chunk intervals (100 ms),
	// so the file holds chunks to cut between on any host.
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "good.data", "--", "./work", "0.6s")
	good, _ := os.ReadFile(filepath.Join(dir, "good.data"))
	offs, err := datafile.ChunkOffsets(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) < 5 { // the header's end, then 3 chunks or more
		t.Fatalf("a 0.6 s recording has %d chunks, want 3 or more (offsets %v)", len(offs)-1, offs)
	}
	newer := append([]byte(nil), good...)
	newer[8] = datafile.Version + 1
	corrupt := append([]byte(nil), good...)
	for i := 40; i < len(corrupt) && i < 60; i++ {
		corrupt[i] ^= 0x5a
	}
	files := map[string][]byte{
		"empty":     {},
		"truncated": good[:30], // inside the first chunk
		"newer":     newer,
		"corrupt":   corrupt,
		"text":      []byte("hello world, not a profile\n"),
	}
	wants := map[string]string{"empty": "not a sonde data file", "truncated": "truncated", "newer": "newer", "corrupt": "corrupt", "text": "not a sonde data file"}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".data")
			os.WriteFile(p, data, 0o644)
			r := testutil.Run(t, dir, "report", "-i", p)
			if r.Code == 0 || strings.Contains(r.Stderr, "panic") {
				t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, wants[name]) {
				t.Errorf("stderr %q, want %q", r.Stderr, wants[name])
			}
		})
	}
	// A file cut after its first chunks reads, and says it was cut: at a
	// chunk's boundary, and inside a later chunk.
	k := len(offs) - 3 // the last chunk before the final one
	for name, at := range map[string]int64{"boundary": offs[2], "inside": offs[k] + (offs[k+1]-offs[k])/2} {
		t.Run("cut_"+name, func(t *testing.T) {
			p := filepath.Join(dir, "cut-"+name+".data")
			os.WriteFile(p, good[:at], 0o644)
			rep := reportJSON(t, dir, "-i", p)
			if rep.Samples == 0 {
				t.Errorf("a file cut at byte %d of %d (chunks at %v) reads back no samples", at, len(good), offs)
			}
			if r := testutil.MustRun(t, dir, "report", "-i", p); !strings.Contains(r.Stdout, "cut") {
				t.Errorf("a cut file's report does not say so:\n%s", r.Stdout)
			}
		})
	}
}

func TestPprofExport(t *testing.T) {
	goBin := testutil.RequireTool(t, "go", "golang")
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "1999", "-o", "w.data", "--", "./work", "300")
	testutil.MustRun(t, dir, "report", "-i", "w.data", "--format", "pprof", "-o", "w.pb.gz")
	out, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount=5", filepath.Join(dir, "w.pb.gz")).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	// First row after the header is the top flat function.
	lines := strings.Split(string(out), "\n")
	top := ""
	for i, l := range lines {
		if strings.Contains(l, "flat%") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			top = f[len(f)-1]
			break
		}
	}
	rep := reportJSON(t, dir, "-i", "w.data", "--no-children")
	if top != rep.Entries[0].Keys["sym"] {
		t.Errorf("pprof top %q, sonde report top %q\n%s", top, rep.Entries[0].Keys["sym"], out)
	}
}

func TestFoldedRoundTrip(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "w.data", "--", "./work", "100")
	folded := testutil.MustRun(t, dir, "flamegraph", "-i", "w.data", "--format", "folded").Stdout
	if !regexp.MustCompile(`(?m)^work;.*main;spin_a \d+$`).MatchString(folded) {
		t.Errorf("folded output lacks work;…;main;spin_a:\n%s", folded)
	}
	os.WriteFile(filepath.Join(dir, "w.folded"), []byte(folded), 0o644)
	again := testutil.MustRun(t, dir, "flamegraph", "-i", "w.folded", "--format", "folded").Stdout
	if again != folded {
		t.Errorf("folded stacks changed in a round trip:\n%s\nvs\n%s", folded, again)
	}
	root, err := flamegraph.ParseFolded(strings.NewReader(folded), nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := reportJSON(t, dir, "-i", "w.data")
	if int(root.Value) != rep.Samples {
		t.Errorf("folded total %g, report samples %d", root.Value, rep.Samples)
	}
}

// TestFlamegraphInBrowser renders the HTML flame graph in headless Chromium
// and checks that frames render, search reports the right match percentage
// and zoom widens the clicked frame to the full width.
func TestFlamegraphInBrowser(t *testing.T) {
	chromium := testutil.RequireTool(t, "chromium", "chromium")
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "4999", "-o", "w.data", "--", "./work", "300")
	testutil.MustRun(t, dir, "flamegraph", "-i", "w.data", "-o", "flame.html", "--title", "work")
	testutil.MustRun(t, dir, "flamegraph", "-i", "w.data", "-o", "flame.svg")
	// The search matches every sample with spin_a on its stack, its callees
	// (interrupts taken in it) included: the report's children share.
	rep := reportJSON(t, dir, "-i", "w.data")
	wantA := 0.0
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "spin_a" {
			wantA += e.ChildPct
		}
	}

	dump := func(url string) string { return testutil.DumpDOM(t, chromium, dir, url) }
	base := "file://" + filepath.Join(dir, "flame.html")
	page := dump(base)
	if n := strings.Count(page, `class="frame`); n < 5 {
		t.Fatalf("rendered %d frames, want several:\n%.2000s", n, page)
	}
	for _, name := range []string{"main", "spin_a", "spin_b"} {
		if !strings.Contains(page, `data-name="`+name+`"`) {
			t.Errorf("frame %s not rendered", name)
		}
	}
	// Search: the matched percentage is spin_a's share of samples.
	page = dump(base + "?s=" + "%5Espin_a%24")
	if got := testutil.SearchPercent(t, page); math.Abs(got-wantA) > 0.01 {
		t.Errorf("search matched %.2f%%, report says spin_a is %.2f%%", got, wantA)
	}
	if !strings.Contains(page, "rgb(230,0,230)") {
		t.Errorf("matched frames not highlighted")
	}
	// Zoom: spin_b fills the width and its siblings disappear.
	page = dump(base + "?x=spin_b")
	if !strings.Contains(page, `data-zoom="spin_b"`) {
		t.Fatalf("zoom did not happen")
	}
	testutil.CheckZoomed(t, page, "spin_b", "spin_a")
	// The standalone SVG renders too.
	svg := dump("file://" + filepath.Join(dir, "flame.svg"))
	if !strings.Contains(svg, `data-name="spin_a"`) {
		t.Errorf("SVG did not render frames")
	}
}

func TestRecordJIT(t *testing.T) {
	dir, _ := testutil.Workload(t, "jit", []string{"jit.c"})
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "jit.data", "--", "./jit", "400000000")
	defer func() {
		m, _ := filepath.Glob("/tmp/perf-*.map")
		for _, f := range m {
			os.Remove(f)
		}
	}()
	rep := reportJSON(t, dir, "-i", "jit.data", "--no-children", "--comm", "jit")
	if got := selfPct(rep, "jit_spin"); got < 80 {
		t.Errorf("jit_spin %.1f%%, want most samples", got)
	}
	for _, e := range rep.Entries {
		if e.Keys["sym"] == "jit_spin" && !strings.HasPrefix(e.Keys["dso"], "perf-") {
			t.Errorf("jit_spin in %q, want the perf map", e.Keys["dso"])
		}
	}
	folded := testutil.MustRun(t, dir, "flamegraph", "-i", "jit.data", "--format", "folded").Stdout
	if !strings.Contains(folded, "jit_spin_[j]") {
		t.Errorf("JIT frames not marked in folded output:\n%s", folded)
	}
}

// startWork runs the workload in the background for -p/-a tests.
func startWork(t *testing.T, dir string, rounds string) *exec.Cmd {
	t.Helper()
	return testutil.Start(t, testutil.BuildC(t, dir, "work", []string{"work.c"}), rounds)
}

func TestRecordPid(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	w := startWork(t, dir, "100000")
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "4999", "-p", strconv.Itoa(w.Process.Pid), "--duration", "1500ms", "-o", "p.data")
	rep := reportJSON(t, dir, "-i", "p.data", "--no-children")
	checkSplit(t, rep, "spin_a", "spin_b")
	testutil.MustRun(t, dir, "record", "-q", "-F", "4999", "-t", strconv.Itoa(w.Process.Pid), "--duration", "500ms", "-o", "t.data")
	if rep := reportJSON(t, dir, "-i", "t.data"); rep.Samples < 500 {
		t.Errorf("-t recorded %d samples in 0.5 s at 4999 Hz", rep.Samples)
	}
}

func TestRecordSystemWide(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	w := startWork(t, dir, "100000")
	testutil.MustRun(t, dir, "record", "-q", "-a", "-g", "--duration", "1500ms", "-o", "a.data")
	rep := reportJSON(t, dir, "-i", "a.data", "--no-children", "--pid", strconv.Itoa(w.Process.Pid))
	checkSplit(t, rep, "spin_a", "spin_b")
	// -C limits to one CPU: every sample carries that CPU.
	testutil.MustRun(t, dir, "record", "-q", "-C", "0", "--duration", "500ms", "-o", "c.data")
	rep = reportJSON(t, dir, "-i", "c.data", "--sort", "cpu")
	for _, e := range rep.Entries {
		if e.Keys["cpu"] != "0" {
			t.Errorf("-C 0 recorded a sample on cpu %s", e.Keys["cpu"])
		}
	}
}

func TestRecordInterrupt(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	testutil.Sonde(t)
	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-o", "i.data")
	cmd.Dir = dir
	ready := testutil.NotifyReady(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready.Wait(t)
	// The case: Ctrl-C as soon as the recording has written its first
	// chunk (the file grows past its header).
	data := filepath.Join(dir, "i.data")
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatalf("no data file once record was ready: %v", err)
	}
	testutil.WaitFor(t, testutil.ReadyTimeout, "record's first chunk", func() bool {
		now, err := os.Stat(data)
		return err == nil && now.Size() > fi.Size()
	})
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record after SIGINT: %v", err)
	}
	rep := reportJSON(t, dir, "-i", "i.data")
	if rep.Samples == 0 {
		t.Errorf("no samples written after Ctrl-C")
	}
}

// A recording killed with SIGKILL keeps what it wrote: the file reads back
// up to its last chunk and says it was cut.
func TestRecordSurvivesSIGKILL(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	// Every CPU busy, so both runs sample at the full rate whatever else
	// the machine does (an idle CPU takes fewer cpu-clock samples).
	for range runtimeCPUs() {
		startWork(t, dir, "1000000")
	}
	testutil.MustRun(t, dir, "record", "-q", "-a", "-g", "--duration", "5s", "-o", "clean.data")
	want := reportJSON(t, dir, "-i", "clean.data").Samples

	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-g", "--duration", "30s", "-o", "cut.data")
	cmd.Dir = dir
	ready := testutil.NotifyReady(t, cmd)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it 5 s into the recording.
	ready.Wait(t)
	t.Logf("recording started %s after launch", time.Since(t0).Round(time.Millisecond))
	time.Sleep(5 * time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	rep := reportJSON(t, dir, "-i", "cut.data")
	t.Logf("clean 5 s run: %d samples; killed after 5 s: %d samples, warnings %q", want, rep.Samples, rep.Meta.Warnings)
	if float64(rep.Samples) < 0.9*float64(want) {
		t.Errorf("the killed recording kept %d samples, a clean one has %d (want ≥ 90%%)", rep.Samples, want)
	}
	cut := false
	for _, w := range rep.Meta.Warnings {
		cut = cut || strings.Contains(w, "cut")
	}
	if !cut {
		t.Errorf("the killed recording does not say it was cut: %q", rep.Meta.Warnings)
	}
	// Its frames are named (from this machine's files, as perf report does).
	txt := testutil.MustRun(t, dir, "report", "-i", "cut.data", "--no-children", "--sort", "sym").Stdout
	if !strings.Contains(txt, "spin_a") {
		t.Errorf("the killed recording's report does not name spin_a:\n%.2000s", txt)
	}
}

// record streams its file: memory stays flat over a long, dense recording.
func TestRecordMemoryFlat(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	startWork(t, dir, "100000000")
	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-g", "-F", "4000", "--duration", "60s", "-o", "long.data")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	peak := testutil.PeakRSS(cmd)
	rep := reportJSON(t, dir, "-i", "long.data")
	st, _ := os.Stat(filepath.Join(dir, "long.data"))
	t.Logf("record -a -g -F 4000 for 60 s: %d samples, %d bytes on disk, peak RSS %d KiB", rep.Samples, st.Size(), peak)
	if rep.Samples < 200000 {
		t.Errorf("only %d samples in 60 s at 4000 Hz on every CPU", rep.Samples)
	}
	if peak > 100<<10 {
		t.Errorf("peak RSS %d KiB, want under 100 MiB", peak)
	}
}

// Ctrl-C to sonde alone ends the recording then: the header's duration is
// the recording's, not the command's whole run.
func TestRecordInterruptDuration(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	// The command itself presses Ctrl-C: 1 s into its run it sends SIGINT
	// to its parent, sonde (which execs it from the held child), and then
	// lives 3 s more, deaf to signals.
	cmd := exec.Command(testutil.Sonde(t), "record", "-q", "-o", "s.data", "--", "sh", "-c", "trap '' TERM INT; sleep 1; kill -INT $PPID; sleep 3")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	txt := testutil.MustRun(t, dir, "report", "-i", "s.data").Stdout
	var d time.Duration
	for _, l := range strings.Split(txt, "\n") {
		if v, ok := strings.CutPrefix(l, "# Duration: "); ok {
			d, _ = time.ParseDuration(strings.Fields(v)[0])
		}
	}
	t.Logf("SIGINT after 1 s of a 4 s command: duration %s, exit %s", d, strconv.Itoa(cmd.ProcessState.ExitCode()))
	if d < 900*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("duration %s after SIGINT at 1 s, want about 1 s", d)
	}
}

// -p ends when its process exits, as perf's does.
func TestRecordPidExits(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	sleeper := exec.Command("sleep", "1")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	go sleeper.Wait()
	start := time.Now()
	testutil.MustRun(t, dir, "record", "-q", "-p", strconv.Itoa(sleeper.Process.Pid), "--duration", "20s", "-o", "p.data")
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("record -p ran %s after its process exited at 1 s", el)
	}
}

func TestProfileBPF(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	w := startWork(t, dir, "100000")
	pid := strconv.Itoa(w.Process.Pid)
	r := testutil.MustRun(t, dir, "profile", "-F", "997", "-p", pid, "-d", "2s", "--json", "-o", "prof.data", "--flamegraph", "prof.html")
	var rep jsonReport
	r.JSON(t, &rep)
	checkSplit(t, rep, "spin_a", "spin_b")
	// The data file feeds the usual views, with call chains.
	rep = reportJSON(t, dir, "-i", "prof.data", "--children")
	if !reportHasChain(rep, "main", "spin_a") {
		t.Errorf("no main → spin_a chain in the BPF profile")
	}
	if _, err := os.Stat(filepath.Join(dir, "prof.html")); err != nil {
		t.Errorf("no flame graph: %v", err)
	}
}
