package main

// Functions named as in the source (issue 9): GCC's clones, split parts
// and inlined copies are found from the source name, and every call is
// counted.

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

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
	var fl struct {
		Functions []struct {
			Function string `json:"name"`
			Stats    struct {
				Count uint64 `json:"count"`
			} `json:"stats"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &fl); err != nil {
		t.Fatalf("funclat JSON: %v\n%s", err, r.Stdout)
	}
	want := map[string]uint64{"clones:scale_first": n, "clones:mix": n + 1, "clones:slow_path": n}
	for _, f := range fl.Functions {
		if f.Stats.Count != want[f.Function] {
			t.Errorf("funclat %s: %d calls, want %d", f.Function, f.Stats.Count, want[f.Function])
		}
		delete(want, f.Function)
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
