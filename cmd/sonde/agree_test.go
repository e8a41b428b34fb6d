package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/modeltest"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// Every output of one run counts the same samples: a filter (--comm,
// --pid, --tid) is applied once, before any output is formed. These tests
// compare the totals of each output a run writes.

// reportTotals is what report --json says of a recording.
type reportTotals struct {
	Samples int    `json:"samples"`
	Total   uint64 `json:"total_period"`
	Entries []struct {
		Keys map[string]string `json:"keys"`
	} `json:"entries"`
}

// TestReportFiltersEveryFormat: report's --comm, --pid and --tid choose
// the same samples for its text, JSON and pprof outputs (pprof used to
// keep every sample).
func TestReportFiltersEveryFormat(t *testing.T) {
	dir := t.TempDir()
	p := modeltest.Sample()
	p.Threads = append(p.Threads, model.Thread{Pid: 200, Tid: 200, Comm: "other"})
	for i := 0; i < 50; i++ {
		p.Samples = append(p.Samples, model.Sample{Time: uint64(i) * 1_003_009, Thread: int32(len(p.Threads) - 1), Stack: 1, Period: 1_003_009})
	}
	data := filepath.Join(dir, "x.data")
	if err := datafile.WriteFile(data, p); err != nil {
		t.Fatal(err)
	}
	count := func(keep func(model.Thread) bool) (n int) {
		for _, s := range p.Samples {
			if keep(p.Threads[s.Thread]) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name    string
		filter  []string
		samples int
	}{
		{"comm", []string{"--comm", "other"}, 50},
		{"pid", []string{"--pid", "100"}, count(func(t model.Thread) bool { return t.Pid == 100 })},
		{"tid", []string{"--tid", "101"}, count(func(t model.Thread) bool { return t.Tid == 101 })},
		{"comm_and_tid", []string{"--comm", "work", "--tid", "101,200"}, count(func(t model.Thread) bool { return t.Tid == 101 })},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := append([]string{"report", "-i", data, "-g", "none", "--no-children", "--sort", "pid"}, c.filter...)
			var js reportTotals
			testutil.MustRun(t, dir, append(base, "--json")...).JSON(t, &js)
			text := testutil.MustRun(t, dir, base...).Stdout
			pb := filepath.Join(dir, c.name+".pb.gz")
			testutil.MustRun(t, dir, append(base, "--format", "pprof", "-o", pb)...)
			pp := readPprof(t, pb)
			if js.Samples != c.samples || pp.samples != int64(c.samples) || pp.total != int64(js.Total) {
				t.Errorf("samples: JSON %d (period %d), pprof %d (period %d); want %d", js.Samples, js.Total, pp.samples, pp.total, c.samples)
			}
			if !strings.Contains(text, "# Samples: "+strconv.Itoa(c.samples)) {
				t.Errorf("text does not count %d samples:\n%s", c.samples, text)
			}
		})
	}
	// pprof keeps whole stacks: --dso and --sym cannot choose its samples.
	r := testutil.Run(t, dir, "report", "-i", data, "--sym", "spin_a", "--format", "pprof", "-o", filepath.Join(dir, "s.pb.gz"))
	if r.Code != 2 || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "--sym") {
		t.Errorf("--sym with pprof: exit %d, %q; want one line and exit 2", r.Code, r.Stderr)
	}
}

type pprofTotals struct{ samples, total int64 }

func readPprof(t *testing.T, path string) pprofTotals {
	t.Helper()
	f := testutil.Open(t, path)
	defer f.Close()
	pp, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out pprofTotals
	for _, s := range pp.Sample {
		out.samples += s.Value[0]
		out.total += s.Value[1]
	}
	return out
}

// agreeWorkload spins about 1 ms and sleeps about 2 ms, forever: on-CPU
// samples for profile, blocks for offcpu and wakes for wakeup.
const agreeWorkload = `#include <time.h>
int main(void) {
	for (;;) {
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do clock_gettime(CLOCK_MONOTONIC, &t); while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 1000000);
		struct timespec d = {0, 2000000};
		nanosleep(&d, 0);
	}
}
`

// TestLiveFiltersEveryOutput runs profile, offcpu and wakeup system-wide
// with --comm: the report (text, JSON), the folded stacks, the flame graph
// and the data file (read back by report and flamegraph) of each run name
// that command only and agree on its total, and the completeness footer
// weighs only its stacks. Before, -f, --flamegraph and -o kept every
// command.
func TestLiveFiltersEveryOutput(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	keep := testutil.CompileC(t, dir, "keepme", agreeWorkload, "-O1")
	drop := filepath.Join(dir, "dropme")
	if b, err := os.ReadFile(keep); err != nil || os.WriteFile(drop, b, 0o755) != nil {
		t.Fatal(err)
	}
	testutil.Start(t, keep)
	testutil.Start(t, drop)
	for _, tool := range []string{"profile", "offcpu", "wakeup"} {
		t.Run(tool, func(t *testing.T) {
			for _, out := range []string{"json", "text", "folded"} {
				data, flame := filepath.Join(dir, tool+out+".data"), filepath.Join(dir, tool+out+".html")
				args := []string{tool, "-d", "1", "--comm", "keepme", "-o", data, "--flamegraph", flame}
				switch out {
				case "json":
					args = append(args, "--json")
				case "folded":
					args = append(args, "-f")
				}
				r := testutil.MustRun(t, dir, args...)
				checkAgree(t, dir, tool, out, r.Stdout, data, flame)
			}
		})
	}
}

// checkAgree compares one run's stdout (out: json, text or folded) with
// its data file and flame graph.
func checkAgree(t *testing.T, dir, tool, out, stdout, data, flame string) {
	t.Helper()
	// The data file, read back: only keepme, and its totals.
	var rep reportTotals
	testutil.MustRun(t, dir, "report", "-i", data, "--json", "-g", "none", "--no-children", "--sort", "comm").JSON(t, &rep)
	for _, e := range rep.Entries {
		if e.Keys["comm"] != "keepme" {
			t.Errorf("%s %s: the data file holds comm %q", tool, out, e.Keys["comm"])
		}
	}
	if rep.Samples == 0 {
		t.Fatalf("%s %s: the data file holds no sample of keepme", tool, out)
	}
	// Folded stacks, as flamegraph makes them from the data file.
	fromData := foldedTotals(foldedOf(t, dir, data))
	flameTotals := flameGraphTotals(t, flame)
	if !sameTotals(fromData, flameTotals) || len(fromData) != 1 || fromData["keepme"] == 0 {
		t.Errorf("%s %s: the flame graph counts %v, the data file %v (want keepme only)", tool, out, flameTotals, fromData)
	}
	switch out {
	case "folded":
		if live := foldedTotals(stdout); !sameTotals(live, fromData) {
			t.Errorf("%s -f: folded stacks count %v, the data file %v", tool, live, fromData)
		}
	case "json":
		checkAgreeJSON(t, tool, stdout, rep)
	case "text":
		if tool == "profile" {
			if !strings.Contains(stdout, "# Samples: "+strconv.Itoa(rep.Samples)) {
				t.Errorf("profile text does not count the data file's %d samples:\n%.1500s", rep.Samples, stdout)
			}
			break
		}
		us := strconv.FormatFloat(float64(rep.Total)/1e3, 'f', 0, 64)
		if !strings.Contains(stdout, " us blocked") || !strings.Contains(stdout, ", "+us+" us blocked") {
			t.Errorf("%s text does not count the data file's %s us:\n%.1500s", tool, us, stdout)
		}
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "    -  ") && !strings.Contains(l, " keepme (") {
				t.Errorf("%s text shows another command: %q", tool, l)
			}
		}
	}
}

// checkAgreeJSON compares a live JSON report with its data file's totals,
// and its completeness counters with the report's own weight.
func checkAgreeJSON(t *testing.T, tool, stdout string, rep reportTotals) {
	t.Helper()
	var live struct {
		Samples int    `json:"samples"`
		Total   uint64 `json:"total_blocked_ns"`
		Stacks  []struct {
			Comm string `json:"comm"`
		} `json:"stacks"`
		Entries []struct {
			Keys map[string]string `json:"keys"`
		} `json:"entries"`
		User *struct {
			Total uint64 `json:"stacks_total"`
			Lost  uint64 `json:"lost_map_full"`
		} `json:"user_stacks"`
		Waker *struct {
			Total uint64 `json:"stacks_total"`
		} `json:"waker_user_stacks"`
	}
	if err := json.Unmarshal([]byte(stdout), &live); err != nil {
		t.Fatalf("%s --json: %v", tool, err)
	}
	weight := live.Total
	if tool == "profile" {
		weight = uint64(live.Samples)
		if live.Samples != rep.Samples {
			t.Errorf("profile --json: %d samples, the data file %d", live.Samples, rep.Samples)
		}
		for _, e := range live.Entries {
			if e.Keys["comm"] != "keepme" {
				t.Errorf("profile --json shows comm %q", e.Keys["comm"])
			}
		}
	} else {
		if live.Total != rep.Total {
			t.Errorf("%s --json: %d ns blocked, the data file %d", tool, live.Total, rep.Total)
		}
		for _, s := range live.Stacks {
			if s.Comm != "keepme" {
				t.Errorf("%s --json shows comm %q", tool, s.Comm)
			}
		}
	}
	// The completeness counters weigh the kept stacks only (stack map
	// losses are not anyone's: they count whole).
	if live.User == nil || live.User.Total-live.User.Lost > weight || live.User.Total == 0 {
		t.Errorf("%s --json: user stacks %+v, against a weight of %d for keepme", tool, live.User, weight)
	}
	if tool == "wakeup" && (live.Waker == nil || live.Waker.Total > weight) {
		t.Errorf("wakeup --json: waker stacks %+v, against %d ns for keepme", live.Waker, weight)
	}
}

// foldedTotals sums folded stacks by their first frame (the command).
func foldedTotals(folded string) map[string]float64 {
	out := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		v, _ := strconv.ParseFloat(l[i+1:], 64)
		comm, _, _ := strings.Cut(l[:i], ";")
		out[comm] += v
	}
	return out
}

// flameGraphTotals reads the weights of a flame graph's second level (the
// commands) from its embedded data.
func flameGraphTotals(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "var FG_DATA = ")
	body, _, ok2 := strings.Cut(rest, ";\nvar FG_CFG")
	if !ok || !ok2 {
		t.Fatalf("%s: no FG_DATA", path)
	}
	var d struct {
		Names []string  `json:"N"`
		N     []int     `json:"n"`
		D     []int     `json:"d"`
		V     []float64 `json:"v"`
	}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]float64{}
	for i := range d.N {
		if d.D[i] == 1 {
			out[d.Names[d.N[i]]] += d.V[i]
		}
	}
	return out
}

func sameTotals(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
