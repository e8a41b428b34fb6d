package ftrace

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// These tests run sonde ftrace on testdata/calltree.c, whose call tree is
// known (main → 3×a → 10×b each, the tenth b sleeping 2 ms; c recursing
// to depth 5), and compare it with Debian's uftrace on the same binary.
// Privileged: run under flock /tmp/sonde-priv.lock.

var traced = map[string]bool{"main": true, "a": true, "b": true, "c": true}

// uftraceRun records bin with uftrace and returns its per-function call
// counts (uftrace report) and its nesting (uftrace replay).
func uftraceRun(t *testing.T, dir, bin string) (map[string]int, []string) {
	t.Helper()
	testutil.RequireTool(t, "uftrace", "uftrace")
	data := filepath.Join(dir, "uftrace.data")
	rec := exec.Command("uftrace", "record", "-d", data, bin)
	rec.Dir = dir // a -pg binary writes gmon.out where it runs
	if b, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("uftrace record: %v\n%s", err, b)
	}
	counts := map[string]int{}
	for _, l := range strings.Split(testutil.Tool(t, "uftrace", "report", "-d", data), "\n") {
		f := strings.Fields(l)
		if len(f) == 6 && traced[f[5]] {
			counts[f[5]], _ = strconv.Atoi(f[4])
		}
	}
	return counts, nesting(testutil.Tool(t, "uftrace", "replay", "-d", data))
}

var callLine = regexp.MustCompile(`\| ( *)([A-Za-z_][A-Za-z0-9_.]*)\(.*\)( = [^;{]*)?( \{|;)`)

// nesting is a replay's calls of the traced functions as "depth name",
// in order (uftrace's and sonde's layouts are the same).
func nesting(replay string) []string {
	var out []string
	for _, l := range strings.Split(replay, "\n") {
		m := callLine.FindStringSubmatch(l)
		if m != nil && traced[m[2]] {
			out = append(out, strconv.Itoa(len(m[1])/2)+" "+m[2])
		}
	}
	return out
}

type reportDoc struct {
	Mechanism string `json:"mechanism"`
	Functions []struct {
		Function string `json:"function"`
		Count    int    `json:"count"`
		MaxNs    int64  `json:"max_ns"`
	} `json:"functions"`
}

func sondeReport(t *testing.T, dir, data string) (map[string]int, reportDoc) {
	t.Helper()
	r := testutil.MustRun(t, dir, "ftrace", "report", "--json", "-i", data)
	var doc reportDoc
	r.JSON(t, &doc)
	counts := map[string]int{}
	for _, f := range doc.Functions {
		if traced[f.Function] {
			counts[f.Function] = f.Count
		}
	}
	return counts, doc
}

func sameCounts(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	for _, fn := range []string{"main", "a", "b", "c"} {
		if got[fn] != want[fn] {
			t.Errorf("%s: %s called %d times, uftrace says %d", what, fn, got[fn], want[fn])
		}
	}
}

func TestAgainstUftrace(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	pg := testutil.BuildC(t, dir, "calltree-pg", []string{"calltree.c"}, "-pg")
	plain := testutil.BuildC(t, dir, "calltree", []string{"calltree.c"})
	fi := testutil.BuildC(t, dir, "calltree-fi", []string{"calltree.c"}, "-finstrument-functions")
	wantCounts, wantNest := uftraceRun(t, dir, pg)
	fiCounts, fiNest := uftraceRun(t, dir, fi)
	sameCounts(t, "uftrace on the -finstrument-functions build", fiCounts, wantCounts)
	if strings.Join(fiNest, ",") != strings.Join(wantNest, ",") {
		t.Errorf("uftrace nests the two builds differently:\n-pg: %v\n-finstrument-functions: %v", wantNest, fiNest)
	}
	if wantCounts["b"] != 30 || wantCounts["c"] != 5 {
		t.Fatalf("uftrace's own counts are off (%v): is the test program right?", wantCounts)
	}
	for _, tc := range []struct{ name, bin, mech string }{
		{"pg_auto", pg, ""},          // the in-process recorder on amd64
		{"finstrument_auto", fi, ""}, // the in-process recorder
		{"pg_uprobes", pg, "uprobe"},
		{"plain_uprobes", plain, "uprobe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(dir, tc.name+".data")
			args := []string{"ftrace", "record", "-o", data}
			if tc.mech != "" {
				args = append(args, "--mechanism", tc.mech)
			}
			t.Setenv("CALLTREE_TIMES", "1")
			r := testutil.MustRun(t, dir, append(append(args, "--"), tc.bin)...)
			if !strings.Contains(r.Stderr, "tracing") || !strings.Contains(r.Stderr, " with ") {
				t.Errorf("sonde does not say which mechanism ran:\n%s", r.Stderr)
			}
			counts, doc := sondeReport(t, dir, data)
			sameCounts(t, tc.name, counts, wantCounts)
			want := "uprobe"
			if tc.mech == "" && (tc.bin == fi || runtime.GOARCH == "amd64") { // -pg: mcount on amd64
				want = "preload"
			}
			if !strings.HasPrefix(doc.Mechanism, want) {
				t.Errorf("mechanism %q, want %s", doc.Mechanism, want)
			}
			rp := testutil.MustRun(t, dir, "ftrace", "replay", "-i", data).Stdout
			if got := nesting(rp); strings.Join(got, ",") != strings.Join(wantNest, ",") {
				t.Errorf("nesting differs from uftrace's:\nsonde:   %v\nuftrace: %v", got, wantNest)
			}
			checkSleeps(t, rp, r.Stderr)
		})
	}
}

var bLine = regexp.MustCompile(`^ *([0-9.]+) (us|ms|s) \[ *\d+\] \|     b\(\);`)

// checkSleeps: the three b() calls sleep 2 ms each. The program's own
// clock around each call is the ground truth's upper bound: sonde's
// duration lies inside it (the probes fire after the first clock read and
// before the second; 50 µs of slack for the printed precision), and a
// sleep of 2 ms never lasts less. A busy machine stretches the call (the
// thread waits for a CPU after its sleep) and the time around it (a
// preemption between the clock read and the call), so only these bounds
// hold on it (0.33 ms apart once beside a CPU hog).
func checkSleeps(t *testing.T, replay, stderr string) {
	t.Helper()
	var sleeps, own []float64
	for _, l := range strings.Split(replay, "\n") {
		m := bLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		if m[2] == "ms" {
			sleeps = append(sleeps, v)
		}
	}
	for _, l := range strings.Split(stderr, "\n") {
		if v, ok := strings.CutPrefix(l, "sleep_ns "); ok {
			ns, _ := strconv.ParseFloat(v, 64)
			own = append(own, ns/1e6)
		}
	}
	if len(sleeps) != 3 || len(own) != 3 {
		t.Fatalf("%d b() calls of a millisecond or more and %d timed by the program, want 3:\n%s", len(sleeps), len(own), replay)
	}
	for i, ms := range sleeps {
		if ms < 1.95 || ms > own[i]+0.05 {
			t.Errorf("sleeping b() %d lasted %.3f ms by sonde, %.3f ms by its own clock around it: want at least 2 ms and at most the program's own", i, ms, own[i])
		}
	}
	t.Logf("sleeping b(): sonde %v ms, own clock %v ms", sleeps, own)
}

func TestAttachPid(t *testing.T) {
	dir, bin := testutil.Workload(t, "calltree", []string{"calltree.c"})
	// sonde is built before the workload starts, so the half second
	// recorded lies inside the workload's life even on a loaded machine.
	testutil.Sonde(t)
	w := testutil.Start(t, bin, "400") // 400 rounds of ~26 ms, killed when done
	// -p reads the process's executable: wait for its exec, not a time.
	testutil.WaitFor(t, 5*time.Second, "the workload's exec", func() bool {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(w.Process.Pid) + "/exe")
		return exe == bin
	})
	data := filepath.Join(dir, "p.data")
	testutil.MustRun(t, dir, "ftrace", "record", "-p", strconv.Itoa(w.Process.Pid), "-d", "0.5", "-o", data)
	counts, _ := sondeReport(t, dir, data)
	if counts["a"] < 6 || counts["b"] < 10*(counts["a"]-1) || counts["b"] > 10*(counts["a"]+1) || counts["c"]%5 > 0 && counts["c"] < 5 {
		t.Errorf("half a second of a running process: %v", counts)
	}
	// Every whole a() holds its 10 b()s.
	g := testutil.MustRun(t, dir, "ftrace", "graph", "-i", data, "a").Stdout
	if !strings.Contains(g, "b\n") || !strings.Contains(g, "a\n") {
		t.Errorf("graph under a:\n%s", g)
	}
	rp := testutil.MustRun(t, dir, "ftrace", "replay", "-i", data).Stdout
	n := nesting(rp)
	for i := 1; i < len(n); i++ {
		if n[i] == "1 b" && n[i-1] != "0 a" && n[i-1] != "1 b" {
			t.Fatalf("b at depth 1 after %q: not nested in a", n[i-1])
		}
	}
	w.Wait()
}

func TestDumps(t *testing.T) {
	dir, bin := testutil.Workload(t, "calltree", []string{"calltree.c"})
	data := filepath.Join(dir, "d.data")
	testutil.MustRun(t, dir, "ftrace", "record", "-o", data, "--", bin)
	chrome := testutil.MustRun(t, dir, "ftrace", "dump", "--chrome", "-i", data).Stdout
	n, names := checkChrome(t, []byte(chrome))
	if n < 39 {
		t.Errorf("%d calls in the Chrome trace, want at least 39", n)
	}
	// The command is gone before its calls are read: its thread is named
	// from what the probes saw.
	for tid, name := range names {
		if name != "calltree" {
			t.Errorf("thread %d is named %q in the Chrome trace, want calltree", tid, name)
		}
	}
	html := filepath.Join(dir, "f.html")
	testutil.MustRun(t, dir, "ftrace", "dump", "--flamegraph", "-i", data, "-o", html)
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "\"b\"") {
		t.Errorf("flame graph: %v, %d bytes", err, len(b))
	}
}
