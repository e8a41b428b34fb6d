package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// shortRuns is how many short-lived processes the loop runs.
const shortRuns = 200

// shortLoop is a shell loop running shortRuns no-frame-pointer processes
// of 20 ms each (testdata/first.c: main → run_spin → spin_here from main's
// first instruction), one after the other, writing each one's pid to
// pidFile.
func shortLoop(bin, pidFile string) string {
	return fmt.Sprintf("for i in $(seq %d); do %s spin 20 & echo $! >> %s; wait; done", shortRuns, bin, pidFile)
}

// shortFigures are what one recording says of the loop's processes.
type shortFigures struct {
	named   int    // distinct pids of the loop seen with comm "first"
	seen    int    // distinct pids of the loop seen at all
	samples uint64 // samples of the loop's pids named "first"
	inMain  uint64 // those whose user frames pass through main;run_spin;spin_here from _start
	outside uint64 // whole stacks before main (the loader) or after it (exit)
	anyMain uint64 // samples through main;run_spin;spin_here from any root (perf's dwarf walk ends at __libc_start_call_main)
	other   []string
}

func (f shortFigures) String() string {
	return fmt.Sprintf("%d of %d processes named (%d with samples), %d of %d samples (%.1f%%) reach _start … main;run_spin;spin_here, %d more (%.1f%%) are whole stacks before or after main; %d (%.1f%%) pass through main from any root",
		f.named, shortRuns, f.seen, f.inMain, f.samples, pct(f.inMain, f.samples), f.outside, pct(f.outside, f.samples), f.anyMain, pct(f.anyMain, f.samples))
}

// shortSample is one sample: its process and its user frames, outermost
// first.
type shortSample struct {
	pid  int
	comm string
	user []string
}

// count gathers the figures of samples against the pids the loop ran.
func (f *shortFigures) count(pids map[int]bool, samples []shortSample) {
	named, seen := map[int]bool{}, map[int]bool{}
	rest := map[string]uint64{}
	for _, s := range samples {
		if !pids[s.pid] {
			continue
		}
		seen[s.pid] = true
		if s.comm != "first" {
			rest["comm "+s.comm]++
			continue
		}
		named[s.pid] = true
		f.samples++
		joined := strings.Join(s.user, ";") + ";"
		if strings.Contains(";"+joined, ";main;run_spin;spin_here;") {
			f.anyMain++
		}
		if len(s.user) > 0 && s.user[0] == "_start" && strings.Contains(joined, ";main;run_spin;spin_here;") {
			f.inMain++
			continue
		}
		if outsideMain(s.user) {
			f.outside++
			continue
		}
		if len(s.user) > 4 {
			joined = strings.Join(s.user[:4], ";") + ";…"
		}
		rest[joined]++
	}
	f.named, f.seen = len(named), len(seen)
	keys := make([]string, 0, len(rest))
	for k := range rest {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return rest[keys[i]] > rest[keys[j]] })
	for i, k := range keys {
		if i == 8 {
			break
		}
		f.other = append(f.other, fmt.Sprintf("%d %s", rest[k], k))
	}
}

// readPids reads the pids the loop wrote.
func readPids(t *testing.T, path string) map[int]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	for _, l := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("%s: %q", path, l)
		}
		pids[p] = true
	}
	if len(pids) != shortRuns {
		t.Fatalf("the loop ran %d processes, want %d", len(pids), shortRuns)
	}
	return pids
}

// sondeShortSamples reads a recording's samples through sonde script --json.
func sondeShortSamples(t *testing.T, dir, data string) []shortSample {
	t.Helper()
	out := testutil.MustRun(t, dir, "script", "-i", data, "--json").Stdout
	var samples []shortSample
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var s struct {
			Pid   int    `json:"pid"`
			Comm  string `json:"comm"`
			Stack []struct {
				Sym    string `json:"sym"`
				Kernel bool   `json:"kernel"`
			} `json:"stack"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("sonde script --json: %v: %.300s", err, sc.Text())
		}
		ss := shortSample{pid: s.Pid, comm: s.Comm}
		for i := len(s.Stack) - 1; i >= 0; i-- {
			if !s.Stack[i].Kernel {
				ss.user = append(ss.user, s.Stack[i].Sym)
			}
		}
		samples = append(samples, ss)
	}
	return samples
}

// perfShortSamples reads perf script -F comm,pid,ip,sym output: a line
// with comm and pid, then one line per frame, innermost first.
func perfShortSamples(out string) []shortSample {
	var samples []shortSample
	var cur *shortSample
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			cur = nil
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			pid, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				continue
			}
			samples = append(samples, shortSample{pid: pid, comm: strings.Join(f[:len(f)-1], " ")})
			cur = &samples[len(samples)-1]
			continue
		}
		f := strings.Fields(line)
		if cur == nil || len(f) < 2 || strings.HasPrefix(f[1], "[unknown]") && strings.Contains(line, "[kernel.kallsyms]") {
			continue
		}
		if strings.Contains(line, "([kernel.kallsyms])") {
			continue
		}
		sym := f[1]
		if i := strings.IndexByte(sym, '+'); i > 0 {
			sym = sym[:i]
		}
		cur.user = append([]string{sym}, cur.user...)
	}
	return samples
}

// TestRecordAllShortLivedProcesses (issue 24): `record -a -g` while 200
// short-lived (20 ms) processes without frame pointers run one after the
// other, a CPU hog beside: ≥ 99% of them are named in the recording and
// ≥ 95% of their samples have whole stacks: from _start through main, or,
// before main and after it (about 3% of a 20 ms life), from the loader's
// entry or into exit. perf record -a --call-graph dwarf on the same loop
// is printed beside.
func TestRecordAllShortLivedProcesses(t *testing.T) {
	dir, bin := testutil.Workload(t, "first", []string{"first.c"}, "-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls")
	cpuHog(t)

	pidFile := filepath.Join(dir, "sonde-pids.txt")
	data := filepath.Join(dir, "short.data")
	r := testutil.MustRun(t, dir, "record", "-a", "-g", "-F", "999", "-o", data, "--", "sh", "-c", shortLoop(bin, pidFile))
	var sonde shortFigures
	sonde.count(readPids(t, pidFile), sondeShortSamples(t, dir, data))
	t.Logf("sonde record -a -g: %s", sonde)
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.Contains(l, "user stacks complete") || strings.Contains(l, "samples (") {
			t.Logf("  %s", l)
		}
	}

	if perfBin, ok := testutil.HaveTool("perf"); ok {
		perfPids := filepath.Join(dir, "perf-pids.txt")
		pdata := filepath.Join(dir, "perf.data")
		rec := exec.Command(perfBin, "record", "-q", "-a", "--call-graph", "dwarf", "-F", "999", "-o", pdata, "--", "sh", "-c", shortLoop(bin, perfPids))
		rec.Dir = dir
		if out, err := rec.CombinedOutput(); err != nil {
			t.Logf("perf record --call-graph dwarf: %v\n%s", err, out)
		} else if out, err := exec.Command(perfBin, "script", "-i", pdata, "-F", "comm,pid,ip,sym").Output(); err != nil {
			t.Logf("perf script: %v", err)
		} else {
			var pf shortFigures
			pf.count(readPids(t, perfPids), perfShortSamples(string(out)))
			t.Logf("perf record -a --call-graph dwarf: %s", pf)
		}
	}

	if sonde.named*100 < 99*shortRuns || float64(sonde.inMain+sonde.outside) < 0.95*float64(sonde.samples) {
		t.Errorf("want ≥ 99%% of the processes named and ≥ 95%% of their samples whole; %s; the rest:\n%s",
			sonde, strings.Join(sonde.other, "\n"))
	}
}
