package main

// perf's files through the binary: every view reads perf.data (file and
// pipe format) and perf script text through internal/service/load, and sonde
// import converts them. The fixtures are internal/format/perfdata's (see its
// testdata/README.md); the privileged test records with Debian's perf.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// fixtureWorkBuildID is the build-id of internal/format/perfdata/testdata/work.elf,
// the binary the fixtures recorded (as /tmp/pd/fx/work).
const fixtureWorkBuildID = "5155a3dd3f9ccaf9d8bab896e29c26039de1b89d"

func perfFixture(name string) string {
	return filepath.Join(testutil.RepoRoot(), "internal", "format", "perfdata", "testdata", name)
}

// runEnv runs sonde in dir with extra environment and standard input.
func runEnv(t *testing.T, dir string, env []string, stdin []byte, args ...string) testutil.Result {
	t.Helper()
	cmd := exec.Command(testutil.Sonde(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running sonde %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return testutil.Result{Args: args, Stdout: o.String(), Stderr: e.String(), Code: code}
}

func mustEnv(t *testing.T, dir string, env []string, stdin []byte, args ...string) testutil.Result {
	t.Helper()
	r := runEnv(t, dir, env, stdin, args...)
	if r.Code != 0 {
		t.Fatalf("sonde %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// buildIDCache makes a perf build-id cache holding work.elf, as perf
// archive would carry it to another machine.
func buildIDCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	placeWorkELF(t, filepath.Join(cache, ".build-id", fixtureWorkBuildID[:2], fixtureWorkBuildID[2:], "elf"))
	return cache
}

// placeWorkELF copies the fixtures' work.elf to path, where a lookup
// (build-id cache, --symfs) is to find it.
func placeWorkELF(t *testing.T, path string) {
	t.Helper()
	mkdir(t, filepath.Dir(path), "")
	elf, err := os.ReadFile(perfFixture("work.elf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, elf, 0o755); err != nil {
		t.Fatal(err)
	}
}

// rowPeriods sums a JSON report's self percentages by comm|dso|sym.
func rowPercents(rep jsonReport) map[string]float64 {
	rows := map[string]float64{}
	for _, e := range rep.Entries {
		rows[e.Keys["comm"]+"|"+e.Keys["dso"]+"|"+e.Keys["sym"]] += e.SelfPct
	}
	return rows
}

func decodeReport(t *testing.T, out string) jsonReport {
	t.Helper()
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	return rep
}

var flatReport = []string{"report", "--json", "--no-children", "-g", "none", "--sort", "comm,dso,sym"}

// TestViewsReadPerfFiles runs every view on perf's files (fixtures, so no
// root): the numbers are perf report's on the same files.
func TestViewsReadPerfFiles(t *testing.T) {
	dir := t.TempDir()
	cache := buildIDCache(t)
	env := []string{"PERF_BUILDID_DIR=" + cache}

	// perf report: spin_a 29 samples (58000000 ns), spin_b 10 (20000000).
	rep := decodeReport(t, mustEnv(t, dir, env, nil, append(flatReport, "-i", perfFixture("tiny.data"))...).Stdout)
	rows := rowPercents(rep)
	if rep.Samples != 39 || math.Abs(rows["work|work|spin_a"]-100*58.0/78) > 0.01 || math.Abs(rows["work|work|spin_b"]-100*20.0/78) > 0.01 {
		t.Errorf("tiny.data: %d samples, rows %v; perf report: 39, spin_a 74.36%%, spin_b 25.64%%", rep.Samples, rows)
	}

	// The pipe format on standard input, as perf report -i - reads it. It
	// has no build-id table: work is found under --symfs at its recorded
	// path, as perf report --symfs finds it.
	pipe, err := os.ReadFile(perfFixture("tiny-pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	if rep := decodeReport(t, mustEnv(t, dir, env, pipe, append(flatReport, "-i", "-")...).Stdout); rep.Samples != 40 {
		t.Errorf("tiny-pipe.data on stdin: %d samples, perf report 40", rep.Samples)
	}
	symfs := t.TempDir()
	placeWorkELF(t, filepath.Join(symfs, "tmp/pd/fx/work"))
	mustEnv(t, dir, env, pipe, "import", "-q", "--symfs", symfs, "-", "-o", "pipe.sonde")
	rep = decodeReport(t, mustEnv(t, dir, env, nil, append(flatReport, "-i", "pipe.sonde")...).Stdout)
	if rows := rowPercents(rep); rep.Samples != 40 || math.Abs(rows["work|work|spin_a"]-75) > 0.01 {
		t.Errorf("tiny-pipe.data imported from stdin: %d samples, rows %v; perf report: 40, spin_a 75%%", rep.Samples, rows)
	}

	// diff of two recordings of the same workload: no significant delta.
	checkNoSignificantDelta(t, mustEnv(t, dir, env, nil, "diff", "--json", perfFixture("tiny.data"), "pipe.sonde").Stdout, false)

	// script, annotate and a flame graph from perf.data.
	if out := mustEnv(t, dir, env, nil, "script", "-i", perfFixture("tiny.data")).Stdout; strings.Count(out, "cpu-clock") != 39 || !strings.Contains(out, "spin_a") {
		t.Errorf("script of tiny.data: want 39 samples with spin_a:\n%s", out)
	}
	if out := mustEnv(t, dir, env, nil, "annotate", "-i", perfFixture("tiny.data"), "--no-source", "spin_a").Stdout; !strings.Contains(out, "<spin_a>:") {
		t.Errorf("annotate spin_a of tiny.data:\n%s", out)
	}
	folded := mustEnv(t, dir, env, nil, "flamegraph", "--format", "folded", "-i", perfFixture("tiny.data")).Stdout
	if !strings.Contains(folded, "work;__libc_start_call_main;main;spin_a 29\n") {
		t.Errorf("folded stacks of tiny.data lack work;…;main;spin_a 29:\n%s", folded)
	}

	// Without the build-id cache work cannot be found: one warning line
	// for it, counted, and the report still comes.
	r := mustEnv(t, dir, []string{"PERF_BUILDID_DIR=" + t.TempDir()}, nil, "report", "-i", perfFixture("tiny.data"))
	var warned []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
		if strings.Contains(l, "unmatched object ") {
			warned = append(warned, l)
		}
	}
	found := false
	for i, l := range warned {
		if !strings.HasPrefix(l, "sonde: warning: ") || !strings.Contains(l, " "+strconv.Itoa(i+1)+"/"+strconv.Itoa(len(warned))+": ") {
			t.Errorf("warning %q is not line %d of %d", l, i+1, len(warned))
		}
		found = found || strings.Contains(l, "/tmp/pd/fx/work (build-id "+fixtureWorkBuildID+"), 39 samples")
	}
	if !found {
		t.Errorf("no warning names work and its 39 samples:\n%s", r.Stderr)
	}
}

// checkNoSignificantDelta: no function of a diff moved more than chance
// allows between two samplings of one workload (sampled), or 3 points
// between two forms of one recording (39 and 40 samples, one at its end).
func checkNoSignificantDelta(t *testing.T, out string, sampled bool) {
	t.Helper()
	var rows []struct {
		DSO, Sym    string
		Base        float64 `json:"baseline_percent"`
		New         float64 `json:"new_percent"`
		Delta       float64 `json:"delta_percent"`
		BaseSamples float64 `json:"baseline_samples"`
		NewSamples  float64 `json:"new_samples"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("diff JSON: %v\n%s", err, out)
	}
	if len(rows) == 0 {
		t.Fatalf("empty diff")
	}
	var n1, n2 float64
	for _, r := range rows {
		n1, n2 = n1+r.BaseSamples, n2+r.NewSamples
	}
	for _, r := range rows {
		// Two samplings of one workload differ by chance: a share p of
		// n1 and n2 samples moves by 3.5 standard errors at most (about
		// 6 points at 75% of 1,000 samples each), never less than 3.
		p := (r.Base + r.New) / 200
		limit := math.Max(3, 350*math.Sqrt(p*(1-p)*(1/math.Max(n1, 1)+1/math.Max(n2, 1))))
		if !sampled {
			limit = 3 // a sample more or less at a cut end
		}
		if (r.Base > 1 || r.New > 1) && math.Abs(r.Delta) > limit {
			t.Errorf("%s %s moved %.2f points (%.2f%% → %.2f%%; by chance at most %.2f with %.0f and %.0f samples)", r.DSO, r.Sym, r.Delta, r.Base, r.New, limit, n1, n2)
		}
	}
}

// TestImportPortable converts perf.data once and reads the result where
// the objects are gone: the names stay.
func TestImportPortable(t *testing.T) {
	dir := t.TempDir()
	cache := buildIDCache(t)
	r := mustEnv(t, dir, nil, nil, "import", "--buildid-dir", cache, perfFixture("tiny.data"), "-o", "tiny.sonde")
	if !strings.Contains(r.Stderr, "39 samples") || !strings.Contains(r.Stderr, "tiny.sonde") {
		t.Errorf("import summary: %s", r.Stderr)
	}
	want := mustEnv(t, dir, []string{"PERF_BUILDID_DIR=" + cache}, nil, append(flatReport, "-i", perfFixture("tiny.data"))...).Stdout
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	got := mustEnv(t, dir, []string{"PERF_BUILDID_DIR=" + t.TempDir()}, nil, append(flatReport, "-i", "tiny.sonde")...).Stdout
	if w, g := rowPercents(decodeReport(t, want)), rowPercents(decodeReport(t, got)); len(g) == 0 || !equalRows(w, g) {
		t.Errorf("report of the imported file %v, of perf.data %v", g, w)
	}
	if out := mustEnv(t, dir, nil, nil, "annotate", "-i", "tiny.sonde", "--no-source", "spin_a").Stdout; !strings.Contains(out, "<spin_a>:") {
		t.Errorf("annotate of the imported file without the binary:\n%s", out)
	}
	// Without the cache work is unmatched: its warning line, then the
	// summary counting it.
	r = mustEnv(t, dir, []string{"PERF_BUILDID_DIR=" + t.TempDir()}, nil, "import", perfFixture("tiny.data"), "-o", "bare.sonde")
	// (The kernel is unmatched too where this kernel is not the recorded
	// one.)
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	n := len(lines) - 1
	if n < 1 || !strings.Contains(r.Stderr, "/1: /tmp/pd/fx/work") && !strings.Contains(r.Stderr, "/2: /tmp/pd/fx/work") ||
		!strings.HasSuffix(lines[n], ", "+strconv.Itoa(n)+" unmatched") {
		t.Errorf("import without the objects:\n%s", r.Stderr)
	}
	// perf script text imports too; a sonde data file is refused.
	mustEnv(t, dir, nil, nil, "import", "-q", perfFixture("tiny.script.txt"), "-o", "text.sonde")
	if r := runEnv(t, dir, nil, nil, "import", "tiny.sonde", "-o", "again.sonde"); r.Code == 0 || !strings.Contains(r.Stderr, "already a sonde data file") {
		t.Errorf("importing a sonde data file: exit %d, %s", r.Code, r.Stderr)
	}
}

func equalRows(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if math.Abs(b[k]-v) > 1e-9 {
			return false
		}
	}
	return true
}

// TestFoldScriptLikeInferno folds perf script text through the binary and
// compares with what inferno-collapse-perf --all made of the same text
// (inferno 0.12.8, checked in).
func TestFoldScriptLikeInferno(t *testing.T) {
	for _, c := range [][2]string{{"tiny.script.txt", "tiny.inferno.folded"}, {"tiny.script-F.txt", "tiny-F.inferno.folded"}} {
		got := testutil.MustRun(t, t.TempDir(), "flamegraph", "--format", "folded", "-i", perfFixture(c[0])).Stdout
		want, err := os.ReadFile(perfFixture(c[1]))
		if err != nil {
			t.Fatal(err)
		}
		compareFoldedLines(t, c[0], got, string(want))
	}
}

// TestFoldFlameGraphSuiteLikeInferno folds each file of FlameGraph's
// stackcollapse-perf suite (internal/format/perfdata/testdata/flamegraph)
// through the binary, as a user would, and compares with what
// inferno-collapse-perf --all makes of the same file in the same test.
func TestFoldFlameGraphSuiteLikeInferno(t *testing.T) {
	inferno := testutil.RequireTool(t, "inferno-collapse-perf", "inferno (cargo install inferno; .ci/run does)")
	dir := t.TempDir()
	for name, text := range testutil.FlameGraphSuite(t) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
		want := testutil.Tool(t, inferno, "--all", path)
		got := testutil.MustRun(t, dir, "flamegraph", "--format", "folded", "-i", path).Stdout
		compareFoldedLines(t, name, got, want)
	}
}

// compareFoldedLines compares folded stacks line for line after sorting.
func compareFoldedLines(t *testing.T, what, got, want string) {
	t.Helper()
	g := strings.Split(strings.TrimSpace(got), "\n")
	if testutil.SameLines(t, what+": folded stacks", "inferno", g, strings.Split(strings.TrimSpace(want), "\n")) {
		t.Logf("%s: %d folded lines equal inferno's", what, len(g))
	}
}

// TestDamagedPerfData: a corrupt perf.data, one cut before its records,
// or one sonde cannot read, fails every view with one line and a non-zero
// status; one cut inside its records reads what is whole and says it was
// cut (TestCutPerfData).
func TestDamagedPerfData(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(perfFixture("tiny.data"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), good...)
	for i := 120; i < 200; i++ {
		corrupt[i] ^= 0x5a
	}
	files := map[string][]byte{
		"header_cut": good[:50],
		"attrs_cut":  good[:200],
		"corrupt":    corrupt,
	}
	z, err := os.ReadFile(perfFixture("tiny-z.data"))
	if err != nil {
		t.Fatal(err)
	}
	files["zstd"] = z
	wants := map[string]string{"header_cut": "perf.data", "attrs_cut": "perf.data", "corrupt": "perf.data", "zstd": "compressed (perf record -z)"}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".data")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"report", "-i", p}, {"flamegraph", "--format", "folded", "-i", p}, {"import", p, "-o", filepath.Join(dir, "x.sonde")}} {
				r := testutil.Run(t, dir, args...)
				lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
				if r.Code == 0 || strings.Contains(r.Stderr, "panic") || len(lines) != 1 {
					t.Fatalf("sonde %v: exit %d, stderr %q; want one line and a failure", args, r.Code, r.Stderr)
				}
				if !strings.Contains(r.Stderr, wants[name]) || !strings.Contains(r.Stderr, p) {
					t.Errorf("sonde %v: %q, want the file and %q", args, r.Stderr, wants[name])
				}
			}
		})
	}
}

// TestCutPerfData: a perf.data cut inside its records, and a pipe stream
// cut inside one, read in every view with what was whole before the cut and
// the warning sonde's own cut files carry (in the report's header; import,
// which has no header, prints it).
func TestCutPerfData(t *testing.T) {
	dir := t.TempDir()
	env := []string{"PERF_BUILDID_DIR=" + buildIDCache(t)}
	for name, c := range map[string]struct {
		fixture string
		at      int
		samples int // whole before the cut (perfdata's TestEveryTruncation counts them)
	}{
		"file": {"tiny.data", 3000, 25},
		"pipe": {"tiny-pipe.data", 5000, 15},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(perfFixture(c.fixture))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, name+".data")
			if err := os.WriteFile(p, data[:c.at], 0o644); err != nil {
				t.Fatal(err)
			}
			rep := decodeReport(t, mustEnv(t, dir, env, nil, append(flatReport, "-i", p)...).Stdout)
			cut := false
			for _, w := range rep.Meta.Warnings {
				cut = cut || strings.HasPrefix(w, "the recording was cut: ")
			}
			if rep.Samples != c.samples || !cut {
				t.Errorf("%d samples, warnings %q; want %d and the cut warning", rep.Samples, rep.Meta.Warnings, c.samples)
			}
			if r := mustEnv(t, dir, env, nil, "report", "-i", p); !strings.Contains(r.Stdout, "# Warning: the recording was cut") {
				t.Errorf("the report does not say the file was cut:\n%s", r.Stdout)
			}
			if r := mustEnv(t, dir, env, nil, "flamegraph", "--format", "folded", "-i", p); !strings.HasPrefix(r.Stdout, "work;") {
				t.Errorf("folded stacks of the cut file:\n%s", r.Stdout)
			}
			// The cut took the build-id table (perf writes it last): the
			// recorded path, under --symfs, names the frames.
			symfs := t.TempDir()
			placeWorkELF(t, filepath.Join(symfs, "tmp/pd/fx/work"))
			out := filepath.Join(dir, name+".sonde")
			r := mustEnv(t, dir, env, nil, "import", "--symfs", symfs, p, "-o", out)
			if !strings.Contains(r.Stderr, "sonde: warning: "+p+": the recording was cut") || !strings.Contains(r.Stderr, fmt.Sprintf(": %d samples", c.samples)) {
				t.Errorf("import says %q; want the cut warning and %d samples", r.Stderr, c.samples)
			}
			if r := mustEnv(t, dir, env, nil, "report", "-i", out, "--no-children", "-g", "none"); !strings.Contains(r.Stdout, "spin_a") || !strings.Contains(r.Stdout, "# Warning: the recording was cut") {
				t.Errorf("the imported cut file:\n%s", r.Stdout)
			}
		})
	}
}

// TestPerfDataAgainstPerf records with Debian's perf (work.c's 3:1 split
// with call chains, the pipe format read from standard input, a fixed
// period, two events, a tracepoint system-wide) and checks sonde's views
// against perf's own: report rows within 0.1 points of perf report's for
// every row above 0.5%, with the same sample and lost counts, per event;
// diff against a sonde recording of the same workload without a
// significant delta; perf script text folded as inferno-collapse-perf --all
// folds it.
func TestPerfDataAgainstPerf(t *testing.T) {
	dir, _ := testutil.Workload(t, "work", []string{"work.c"})
	// perf record fills $HOME/.debug, its build-id cache: keep it aside.
	home := mkdir(t, dir, "home")
	env := []string{"HOME=" + home}
	p := testutil.NewPerf(t, dir, home)
	cases := []struct {
		name string
		args []string
		pipe bool // perf record -o -, read by sonde from standard input
	}{
		{name: "perf", args: []string{"-e", "cpu-clock", "-g", "./work", "300"}},
		{name: "pipe", pipe: true, args: []string{"-e", "cpu-clock", "-g", "./work", "150"}},
		{name: "fixed_period", args: []string{"-e", "cpu-clock", "-c", "200000", "./work", "80"}},
		{name: "two_events", args: []string{"-e", "cpu-clock,task-clock", "-c", "250000", "-g", "./work", "80"}},
		{name: "tracepoint", args: []string{"-e", "sched:sched_switch", "-a", "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.02; done"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.name + ".data"
			var stdin []byte
			in := file
			if tc.pipe {
				pf, err := os.Create(filepath.Join(dir, file))
				if err != nil {
					t.Fatal(err)
				}
				p.Run(t, pf, append([]string{"record", "-q", "-o", "-"}, tc.args...)...)
				pf.Close()
				if stdin, err = os.ReadFile(filepath.Join(dir, file)); err != nil {
					t.Fatal(err)
				}
				in = "-"
			} else {
				p.Run(t, nil, append([]string{"record", "-q", "-o", file}, tc.args...)...)
			}
			reps := decodeReports(t, mustEnv(t, dir, env, stdin, append(flatReport, "-i", in)...).Stdout)
			want := parsePerfEvents(t, p.Run(t, nil, "report", "-i", file, "--stdio", "--no-children", "-g", "none",
				"--sort", "comm,dso,sym", "-F", "period,sample,comm,dso,sym", "--percent-limit", "0", "-t", "|"))
			if len(reps) != len(want) {
				t.Fatalf("%d events, perf report %d", len(reps), len(want))
			}
			for i, rep := range reps {
				compareWithPerf(t, rep, want[i])
			}
		})
	}

	t.Run("diff", func(t *testing.T) {
		mustEnv(t, dir, env, nil, "record", "-q", "-g", "-o", "sonde.data", "--", "./work", "300")
		checkNoSignificantDelta(t, mustEnv(t, dir, env, nil, "diff", "--json", "perf.data", "sonde.data").Stdout, true)
	})

	t.Run("fold", func(t *testing.T) {
		inferno := testutil.RequireTool(t, "inferno-collapse-perf", "inferno (cargo install inferno; .ci/run does)")
		for _, fields := range [][]string{nil, {"-F", "comm,pid,tid,time,event,ip,sym,dso,period"}} {
			text := p.Run(t, nil, append([]string{"script", "-i", "perf.data"}, fields...)...)
			if err := os.WriteFile(filepath.Join(dir, "perf-script.txt"), text, 0o644); err != nil {
				t.Fatal(err)
			}
			want := testutil.Tool(t, inferno, "--all", filepath.Join(dir, "perf-script.txt"))
			got := mustEnv(t, dir, env, nil, "flamegraph", "--format", "folded", "-i", "perf-script.txt").Stdout
			compareFoldedLines(t, "perf script "+strings.Join(fields, " "), got, want)
		}
	})
}

type perfRows struct {
	event                 string
	samples, period, lost uint64
	rows                  map[string]uint64 // period by comm|dso|sym
}

// decodeReports reads report --json: one report, or a list of one per
// event.
func decodeReports(t *testing.T, out string) []jsonReport {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(out), "[") {
		var reps []jsonReport
		if err := json.Unmarshal([]byte(out), &reps); err != nil {
			t.Fatalf("report JSON: %v\n%s", err, out)
		}
		return reps
	}
	return []jsonReport{decodeReport(t, out)}
}

// compareWithPerf checks one event's report against perf report's rows:
// every row above 0.5% within 0.1 points, the same sample and lost counts.
// Unnamed addresses are summed per comm and object on both sides.
func compareWithPerf(t *testing.T, rep jsonReport, want perfRows) {
	t.Helper()
	if rep.Samples != int(want.samples) || rep.Meta.Lost != want.lost {
		t.Errorf("%s: %d samples, %d lost; perf report %d and %d", want.event, rep.Samples, rep.Meta.Lost, want.samples, want.lost)
	}
	got := map[string]float64{}
	for _, e := range rep.Entries {
		sym, dso := e.Keys["sym"], e.Keys["dso"]
		if strings.HasPrefix(sym, filepath.Base(dso)+"+0x") {
			sym = "?" // sonde names an unnamed address object+0xOFFSET
		}
		got[e.Keys["comm"]+"|"+dso+"|"+testutil.AliasKey(sym)] += e.SelfPct
	}
	compared := testutil.SameShares(t, want.event, "perf report", got, 100, want.rows, want.period)
	t.Logf("%s: %d samples; %d rows above 0.5%% agree with perf report", want.event, rep.Samples, compared)
}

// parsePerfEvents reads perf report -F period,sample,comm,dso,sym -t '|',
// one section per event. Symbols lose perf's [k]/[.] marks; unnamed
// addresses become "?".
func parsePerfEvents(t *testing.T, out []byte) []perfRows {
	t.Helper()
	var evs []perfRows
	var lost uint64
	for _, l := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutPrefix(l, "# Total Lost Samples:"); ok {
			lost, _ = strconv.ParseUint(strings.TrimSpace(n), 10, 64)
		}
		if _, name, ok := strings.Cut(l, " of event '"); ok && strings.HasPrefix(l, "# Samples:") {
			evs = append(evs, perfRows{event: strings.TrimSuffix(name, "'"), lost: lost, rows: map[string]uint64{}})
		}
		f := strings.Split(l, "|")
		if strings.HasPrefix(l, "#") || len(f) != 5 || len(evs) == 0 {
			continue
		}
		r := &evs[len(evs)-1]
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		period, err1 := strconv.ParseUint(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("perf report row %q", l)
		}
		sym := f[4]
		if len(sym) > 4 && sym[0] == '[' && sym[2] == ']' {
			sym = sym[4:]
		}
		if strings.HasPrefix(sym, "0x") {
			sym = "?"
		}
		r.samples += n
		r.period += period
		r.rows[f[2]+"|"+f[3]+"|"+testutil.AliasKey(sym)] += period
	}
	if len(evs) == 0 {
		t.Fatalf("no events in perf report:\n%s", out)
	}
	return evs
}
