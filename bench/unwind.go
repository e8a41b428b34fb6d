package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
)

var unwindReps = flag.Int("unwind-reps", 3, "repetitions of each unwinder slowdown configuration")

// pyLoop is a pure-Python CPU loop (json and re, as in issue 11) that
// times itself: the work is fixed, its wall time printed.
const pyLoop = `import json, re, sys, time
def work(n):
    s = 0
    for i in range(n):
        s += len(json.dumps({'k': i, 'v': [i, str(i)]})) + len(re.findall(r'\d', str(i * i)))
    return s
t = time.monotonic()
for _ in range(int(sys.argv[1])):
    work(1000)
print("elapsed_ms %.1f" % ((time.monotonic() - t) * 1000))
`

// unwindBench compares record's call-graph modes on binaries without frame
// pointers: bytes per sample of --call-graph auto (-g), fp and perf's
// dwarf mode; the target's slowdown at 999 Hz under auto and fp; the cost
// of building libc's and python3's unwind tables and the BPF map memory
// their rows take.
func unwindBench(dir string) {
	cbin := gcc(dir, "unwind-nofp", "testdata/unwind.c", "-O2", "-fomit-frame-pointer", "-pthread")
	spin := gcc(dir, "spin-nofp", "bench/testdata/spin.c", "-O2", "-fomit-frame-pointer", "-pthread")
	py := "/usr/bin/python3"
	script := filepath.Join(dir, "loop.py")
	if err := os.WriteFile(script, []byte(pyLoop), 0o644); err != nil {
		fail(err.Error())
	}

	fmt.Printf("\n8. Unwinding without frame pointers (record --call-graph auto = -g, fp; perf --call-graph dwarf)\n")
	// Slowdown: the target's own timing, recorded from its start (record
	// -- CMD starts it once everything is attached).
	targets := []config{
		{"C (spin.c -O2 -fomit-frame-pointer)", []string{spin, strconv.Itoa(*iters)}},
		{"python3 pure-Python loop", []string{py, script, "500"}},
	}
	modes := []string{"none", "fp", "auto"}
	for _, tg := range targets {
		elapsed := map[string][]float64{}
		bps := map[string][]float64{}
		interleave("unwind "+tg.name, *unwindReps, len(modes), func(i int) {
			m := modes[i]
			ms, b := recordTarget(dir, m, tg.args)
			elapsed[m] = append(elapsed[m], ms)
			if b > 0 {
				bps[m] = append(bps[m], b)
			}
		})
		base := median(elapsed["none"])
		slow := func(m string) float64 { return 100 * (median(elapsed[m])/base - 1) }
		fmt.Printf("   %s, 999 Hz, %d interleaved runs (medians)\n", tg.name, *unwindReps)
		fmt.Printf("     alone %.1f ms; --call-graph fp %+.2f%%, auto %+.2f%%", base, slow("fp"), slow("auto"))
		if slow("fp") > 0 {
			fmt.Printf(" (auto/fp %.2f, goal ≤ 1.5)", slow("auto")/slow("fp"))
		}
		fmt.Printf("\n     bytes/sample: fp %.1f, auto %.1f (auto/fp %.2f, goal ≤ 2)\n", median(bps["fp"]), median(bps["auto"]), median(bps["auto"])/median(bps["fp"]))
	}

	// Bytes per sample and reach on the workloads, perf's dwarf mode beside.
	fmt.Printf("   bytes per sample, one recording each at 999 Hz (stacks reaching main)\n")
	for _, tg := range []config{
		{"C unwind.c (main → dispatch → heavy/light)", []string{cbin, "2"}},
		// ≥ 2 s, as the python3 test: a file's fixed part (names,
		// lines, the hot functions' code) is not spread over a tenth of a
		// second's samples.
		{"python3 pure-Python loop, 2 s", []string{py, script, "1000"}},
	} {
		auto := sondeBytes(dir, "auto", tg.args)
		fp := sondeBytes(dir, "fp", tg.args)
		dwarf := perfDwarfBytes(dir, tg.args)
		fmt.Printf("     %-44s auto %6.1f  fp %6.1f  perf dwarf %8.1f  auto/dwarf 1/%.0f (goal ≥ 1/100)\n", tg.name, auto, fp, dwarf, dwarf/auto)
	}

	// Tables: build time and memory, and the map memory of their rows.
	fmt.Printf("   unwind tables (best of 3 builds; rows take 8 B each in the BPF array)\n")
	var rows int
	for _, path := range []string{systemLibc(), "/usr/bin/python3.11"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		best := time.Duration(1 << 62)
		var alloc, retained uint64
		var tab *unwindtable.Table
		for i := 0; i < 3; i++ {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			t, _, err := unwindtable.NewCache().Get(path)
			d := time.Since(start)
			if err != nil {
				fail(fmt.Sprintf("building %s's table: %v", path, err))
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			best = min(best, d)
			alloc, retained = after.TotalAlloc-before.TotalAlloc, after.HeapAlloc-before.HeapAlloc
			tab = t
			runtime.KeepAlive(t)
		}
		rows += len(tab.Rows)
		fmt.Printf("     %-34s %6d rows  build %6s  %5.1f MB allocated  %4.2f MB retained  map %4d KB\n",
			path, len(tab.Rows), best.Round(100*time.Microsecond), float64(alloc)/1e6, float64(retained)/1e6, len(tab.Rows)*8/1024)
	}
	fmt.Printf("     together: %d rows, %d KB of unwind_rows (+ 512 KB rule dictionary, 8 KB per traced process)\n", rows, rows*8/1024)
}

// recordTarget runs args alone (mode "none") or under sonde record in
// mode, returning the target's timing and record's bytes per sample.
func recordTarget(dir, mode string, args []string) (float64, float64) {
	out := filepath.Join(dir, "u-"+mode+".data")
	var cmd *exec.Cmd
	if mode == "none" {
		cmd = exec.Command(args[0], args[1:]...)
	} else {
		cmd = exec.Command(*sondeBin, append([]string{"record", "-q", "-F", "999", "--call-graph", mode, "-o", out, "--"}, args...)...)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		fail(fmt.Sprintf("%v: %v", cmd.Args, err))
	}
	ms := parseElapsed(stdout.String())
	if mode == "none" {
		return ms, 0
	}
	n := sondeSamples(out)
	if n == 0 {
		return ms, 0
	}
	return ms, float64(size(out)) / float64(n)
}

// sondeBytes records args once in mode and returns bytes per sample.
func sondeBytes(dir, mode string, args []string) float64 {
	out := filepath.Join(dir, "b-"+mode+".data")
	mustRun(append([]string{*sondeBin, "record", "-q", "-F", "999", "--call-graph", mode, "-o", out, "--"}, args...)...)
	n := sondeSamples(out)
	if n == 0 {
		return 0
	}
	return float64(size(out)) / float64(n)
}

// perfDwarfBytes records args with perf's DWARF mode (8 KB stack copies
// per sample, its default) and returns bytes per sample.
func perfDwarfBytes(dir string, args []string) float64 {
	out := filepath.Join(dir, "dwarf.perf.data")
	mustRun(append([]string{*perfBin, "record", "-q", "-F", "999", "--call-graph", "dwarf", "-o", out, "--"}, args...)...)
	n := perfSamples(out)
	if n == 0 {
		return 0
	}
	return float64(size(out)) / float64(n)
}
