package main

// Probes on user functions named as in the source: GCC's clones, split
// parts and inlined copies are found from the source name (issue 9), a Go
// program is left unharmed, and every call is counted.

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// funclatJSON is what the tests read of funclat --json, by the keys
// docs/json.md gives (not through the view's own types).
type funclatJSON struct {
	DurationNS int64  `json:"duration_ns"`
	Attach     string `json:"attach"`
	Functions  []struct {
		Name    string `json:"name"`
		Untimed uint64 `json:"untimed"`
		Stats   struct {
			Count uint64 `json:"count"`
		} `json:"stats"`
		Buckets []struct {
			Lo, Hi, Count uint64
		} `json:"buckets"`
	} `json:"functions"`
}

// funclatReport decodes the output of a funclat --json run that reported
// on n functions.
func funclatReport(t *testing.T, r testutil.Result, n int) funclatJSON {
	t.Helper()
	var rep funclatJSON
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || len(rep.Functions) != n {
		t.Fatalf("funclat JSON (want %d functions): %v\n%s", n, err, r.Stdout)
	}
	return rep
}

func TestClonedFunctionCalls(t *testing.T) {
	// -fipa-cp-clone (an -O3 pass) keeps mix beside mix.constprop.0.
	dir, bin := testutil.Workload(t, "clones", []string{"clones.c"}, "-O2", "-fipa-cp-clone")
	const n = 2000
	// Known calls (testdata/clones.c): scale_first.isra.0 n, mix and
	// mix.constprop.0 together n+1, slow_path.part.0 n, square inlined
	// n+1 times.

	// stat -e u:BIN:FUNC counts the entries of every clone and inlined copy.
	r := testutil.MustRun(t, dir, "stat", "--json", "-o", "stat.json", "-e", "u:"+bin+":mix", "-e", "u:"+bin+":square", "--", bin, strconv.Itoa(n))
	s := readStat(t, dir, "stat.json")
	got := map[string]float64{}
	for _, c := range s.Counts {
		for _, fn := range []string{"mix", "square"} {
			if strings.HasSuffix(c.Event, "_"+fn) {
				got[fn] = c.Value
			}
		}
	}
	if got["mix"] != n+1 || got["square"] != n+1 {
		t.Errorf("stat counted mix %v, square %v; want %d each\n%+v", got["mix"], got["square"], n+1, s.Counts)
	}
	for _, want := range []string{"sonde: mix: probing mix, mix.constprop.0", "sonde: square was inlined by the compiler (DWARF): probing its 2 inlined copies (in main)"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stat stderr lacks %q:\n%s", want, r.Stderr)
		}
	}

	// funclat needs returns: clones and split parts have them.
	work := exec.Command(bin, strconv.Itoa(n), "2500") // waits 2.5 s for the probes
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	defer work.Wait()
	r = testutil.MustRun(t, dir, "funclat", "-p", strconv.Itoa(work.Process.Pid), "-d", "5s", "--json",
		bin+":scale_first", bin+":mix", bin+":slow_path")
	want := map[string]uint64{"clones:scale_first": n, "clones:mix": n + 1, "clones:slow_path": n}
	for _, f := range funclatReport(t, r, 3).Functions {
		if f.Stats.Count != want[f.Name] {
			t.Errorf("funclat %s: %d calls, want %d", f.Name, f.Stats.Count, want[f.Name])
		}
		delete(want, f.Name)
	}
	if len(want) > 0 {
		t.Errorf("funclat reported no %v:\n%s", want, r.Stdout)
	}
	if !strings.Contains(r.Stderr, "sonde: scale_first: probing scale_first.isra.0") || !strings.Contains(r.Stderr, "slow_path.part.0") {
		t.Errorf("funclat does not say which clones it chose:\n%s", r.Stderr)
	}
	t.Logf("stat: %v; funclat stderr:\n%s", got, r.Stderr)

	// A latency needs a return, which an inlined copy lacks.
	r = testutil.Run(t, dir, "funclat", "-d", "1s", bin+":square")
	if r.Code == 0 || !strings.Contains(r.Stderr, "square was inlined") || !strings.Contains(r.Stderr, "no return") {
		t.Errorf("funclat on an inlined function: exit %d, stderr %q; want a refusal with the reason", r.Code, r.Stderr)
	}
}

// funclat on a Go program must not change it (a uretprobe on a goroutine
// stack makes the runtime abort: "unexpected return pc"), and its call
// counts are exact although goroutines move between threads and their
// stacks grow and move during the calls.
func TestFunclatGoProgramUnharmed(t *testing.T) {
	dir, bin := testutil.GoWorkload(t, "goprog", "goprog")
	want := testutil.Tool(t, bin, "500")
	calls := map[string]uint64{}
	for _, f := range strings.Fields(string(want)) {
		if k, v, ok := strings.Cut(f, "="); ok && k != "checksum" {
			n, _ := strconv.ParseUint(v, 10, 64)
			calls["goprog:main."+k] = n
		}
	}

	// The program waits 3 s before working, so funclat attaches first
	// even on a loaded machine (it refuses a pid that has already exited).
	prog := exec.Command(bin, "500", "3s")
	var progOut strings.Builder
	prog.Stdout = &progOut
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	r := testutil.MustRun(t, dir, "funclat", "--json", "-p", strconv.Itoa(prog.Process.Pid), "-d", "7",
		bin+":main.work", bin+":main.deep")
	if err := prog.Wait(); err != nil {
		t.Fatalf("the traced Go program failed: %v\n%s", err, progOut.String())
	}
	if progOut.String() != string(want) {
		t.Errorf("traced output differs:\n%s\nuntraced:\n%s", progOut.String(), want)
	}
	rep := funclatReport(t, r, 2)
	if !strings.Contains(rep.Attach, "Go") {
		t.Errorf("attach mode %q does not say the Go path ran", rep.Attach)
	}
	for _, f := range rep.Functions {
		got := f.Stats.Count + f.Untimed
		t.Logf("%s: %d timed + %d untimed (stack moved) = %d calls, program says %d", f.Name, f.Stats.Count, f.Untimed, got, calls[f.Name])
		if got != calls[f.Name] {
			t.Errorf("%s: %d calls counted, the program made %d", f.Name, got, calls[f.Name])
		}
		if f.Stats.Count < got*9/10 {
			t.Errorf("%s: only %d of %d calls timed", f.Name, f.Stats.Count, got)
		}
	}
}
