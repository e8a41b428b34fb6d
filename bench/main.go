// Command bench measures sonde side by side with perf (Debian's linux-perf)
// in one run, interleaving repetitions so drift hits both tools alike:
//
//  1. slowdown of a CPU-bound target that times itself, while recording
//     system-wide with call chains at 999 Hz (none / perf / sonde, rotated);
//  2. bytes per sample of the data files those recordings wrote;
//  3. time and peak RSS to produce a report and a flame-graph input from a
//     recording of at least -samples samples;
//  4. seed 002's dd pipeline alone and under sonde cputime;
//  5. a flame graph of a million distinct folded stacks (time, peak RSS,
//     page size against issue 10's targets, and beside inferno-flamegraph;
//     -flamegraph runs only this);
//  6. the BPF cost of every BPF tool beside its peer, timed by the kernel
//     (bpf_stats; -cost runs only this, see cost.go).
//  7. cost per lock operation of sonde deadlock and of bpftrace doing the
//     same uprobes, on a lock loop (-deadlock runs only this);
//  8. record's call-graph modes on code without frame pointers (-unwind
//     runs only this; see unwind.go);
//  9. sonde serve on a 1 M-sample recording in Chromium (-web runs only this);
//  10. sonde memleak's cost per allocation beside bpftrace doing the same
//     uprobes (-memleak runs only this);
//  11. per-call cost of function-graph tracing: uftrace, sonde ftrace
//     in-process and through uprobes, and the bare uprobe floor (-ftrace
//     runs only this);
//  12. start-up with the unwind-table cache empty, filled and off
//     (-tablecache runs only this; see tablecache.go);
//  13. start-up and idle cost of every BPF tool and record beside
//     libbpf-tools and perf (-start runs only this; see start.go);
//  14. the CPython walk's cost per sample against the native walk
//     (-python runs only this; see python.go).
//
// Goals (not CI gates): slowdown ≤ ½ perf's, bytes/sample ≤ ¼ perf.data's,
// report ≥ 5× faster than perf report --stdio at ≤ ½ its RSS.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	sondeBin = flag.String("sonde", "out/sonde", "sonde binary")
	perfBin  = flag.String("perf", "perf", "perf binary")
	reps     = flag.Int("reps", 7, "repetitions of each slowdown configuration")
	iters    = flag.Int("iters", 8000000, "target iterations (about 2 s here)")
	samples  = flag.Int("samples", 1000000, "samples in the big recording")
	bigFreq  = flag.Int("big-freq", 25000, "sampling rate for the big recording")
	skipBig  = flag.Bool("skip-big", false, "skip the big-recording report benchmark")
	ddBlocks = flag.Int("dd-blocks", 300000, "1 KB blocks through the seed 002 pipeline")
)

// section is a part of the bench that runs alone with -NAME; the full run
// does every section, in this order, after the slowdown measurements.
type section struct {
	name, help string
	root       bool // records or traces: needs root, perf and the spin workload
	run        func(dir, spin string) bool
}

var sections = []section{
	{"seed002", "run only the cputime benchmark", true, func(string, string) bool { seed002(); return true }},
	{"ftrace", "run only the function-graph tracing benchmark", true, func(dir, _ string) bool { ftraceBench(dir); return true }},
	{"memleak", "run only the memleak cost case (root, bpftrace)", true, func(dir, _ string) bool { memleakCost(dir); return true }},
	{"flamegraph", "run only the flame-graph scale case (needs no root)", false, func(dir, _ string) bool { return flameScale(dir) }},
	{"cost", "run only the BPF cost table (kernel-measured, sonde vs peers)", true, func(dir, spin string) bool { costTable(dir, spin); return true }},
	{"deadlock", "run only the deadlock cost comparison (sonde deadlock vs bpftrace vs untraced)", true, func(dir, _ string) bool { deadlockCost(dir); return true }},
	{"agent", "run only the agent overhead case", true, func(dir, spin string) bool { agentOverhead(dir, spin); return true }},
	{"unwind", "run only the unwinder section", true, func(dir, _ string) bool { unwindBench(dir); return true }},
	{"tablecache", "run only the unwind-table cache's cold vs warm start", true, func(dir, _ string) bool { tableCacheBench(dir); return true }},
	{"web", "run only the web view's scale case (needs no root)", false, func(string, string) bool { return webScale() }},
	{"python", "run only the CPython-walk cost per sample (profile with and without --no-interp)", true, func(dir, _ string) bool { pythonCost(dir); return true }},
	{"start", "run only the start-up and idle table (first event, wall, CPU, idle CPU; sonde vs libbpf-tools)", true, func(dir, _ string) bool { startTable(dir); return true }},
}

func main() {
	only := make([]*bool, len(sections))
	for i, s := range sections {
		only[i] = flag.Bool(s.name, false, s.help)
	}
	flag.Parse()
	if *floorProg {
		holdFloorProg()
		return
	}
	var chosen []section
	needRoot := false
	for i, s := range sections {
		if *only[i] {
			chosen = append(chosen, s)
			needRoot = needRoot || s.root
		}
	}
	dir, err := os.MkdirTemp("", "sonde-bench")
	if err != nil {
		fail(err.Error())
	}
	ok := bench(dir, chosen, needRoot || len(chosen) == 0)
	os.RemoveAll(dir)
	if !ok {
		os.Exit(1)
	}
}

// bench runs the chosen sections, or everything when none is chosen, in
// dir; root says whether they record or trace.
func bench(dir string, chosen []section, root bool) bool {
	ok := true
	var spin string
	if root {
		if os.Geteuid() != 0 {
			fail("bench records system-wide: run as root")
		}
		if _, err := exec.LookPath(*perfBin); err != nil {
			fail("perf not found: apt-get install linux-perf")
		}
		spin = gcc(dir, "spin", "bench/testdata/spin.c", "-O1", "-fno-omit-frame-pointer", "-pthread")
		fmt.Printf("sonde bench: %s, %d CPUs, kernel %s\n\n", time.Now().Format(time.RFC3339), runtime.NumCPU(), kernel())
	}
	if len(chosen) > 0 {
		for _, s := range chosen {
			ok = s.run(dir, spin) && ok
		}
		return ok
	}

	// 1 and 2: slowdown and bytes per sample.
	configs := []string{"none", "perf", "sonde", "profile"}
	elapsed := map[string][]float64{}
	bytesPer := map[string][]float64{}
	interleave("slowdown", *reps, len(configs), func(i int) {
		c := configs[i]
		ms, bps := runUnder(c, dir, spin)
		elapsed[c] = append(elapsed[c], ms)
		if bps > 0 {
			bytesPer[c] = append(bytesPer[c], bps)
		}
	})
	base := median(elapsed["none"])
	slow := func(c string) float64 { return 100 * (median(elapsed[c])/base - 1) }
	fmt.Printf("1. Slowdown of a CPU-bound target, system-wide -g at 999 Hz (%d interleaved repetitions, medians)\n", *reps)
	fmt.Printf("   no recorder   %8.1f ms\n", base)
	fmt.Printf("   perf record   %8.1f ms  %+6.2f%%\n", median(elapsed["perf"]), slow("perf"))
	fmt.Printf("   sonde record  %8.1f ms  %+6.2f%%\n", median(elapsed["sonde"]), slow("sonde"))
	fmt.Printf("   sonde profile %8.1f ms  %+6.2f%%  (BPF, stacks counted in the kernel)\n", median(elapsed["profile"]), slow("profile"))
	if slow("perf") > 0 {
		fmt.Printf("   ratio sonde/perf slowdown: %.2f (goal ≤ 0.5)\n", slow("sonde")/slow("perf"))
	}
	fmt.Printf("\n2. Bytes per sample on disk (-a -g, same runs)\n")
	bp, bs := median(bytesPer["perf"]), median(bytesPer["sonde"])
	fmt.Printf("   perf.data   %8.1f B/sample\n   sonde.data  %8.1f B/sample\n   ratio sonde/perf: %.3f (goal ≤ 0.25)\n", bp, bs, bs/bp)

	for _, s := range sections {
		ok = s.run(dir, spin) && ok
	}
	if *skipBig {
		return ok
	}
	// 3: a big recording per tool, then reports and flame-graph inputs.
	threads := runtime.NumCPU()
	secs := float64(*samples)/float64(*bigFreq*threads)*1.15 + 1
	bigIters := int(secs * float64(*iters) / (base / 1000))
	fmt.Fprintf(os.Stderr, "big recordings: ~%.0f s each at %d Hz on %d threads\n", secs, *bigFreq, threads)
	perfData := filepath.Join(dir, "big.perf.data")
	sondeData := filepath.Join(dir, "big.sonde.data")
	mustRun(*perfBin, "record", "-q", "-g", "-F", strconv.Itoa(*bigFreq), "-o", perfData, "--", spin, strconv.Itoa(bigIters), strconv.Itoa(threads))
	mustRun(*sondeBin, "record", "-q", "--call-graph", "fp", "-F", strconv.Itoa(*bigFreq), "-o", sondeData, "--", spin, strconv.Itoa(bigIters), strconv.Itoa(threads))
	np, ns := perfSamples(perfData), sondeSamples(sondeData)
	fmt.Printf("\n3. Reports from big recordings (perf: %d samples, sonde: %d samples; 3 interleaved runs, medians)\n", np, ns)
	jobs := []config{
		{"perf report --stdio", []string{*perfBin, "report", "--stdio", "-i", perfData}},
		{"sonde report", []string{*sondeBin, "report", "-i", sondeData}},
		{"perf script (flame graph input)", []string{*perfBin, "script", "-i", perfData}},
		{"sonde flamegraph", []string{*sondeBin, "flamegraph", "-i", sondeData, "-o", filepath.Join(dir, "f.html")}},
	}
	wall := map[string][]float64{}
	rss := map[string][]float64{}
	interleave("reports", 3, len(jobs), func(i int) {
		u := measure(exec.Command(jobs[i].args[0], jobs[i].args[1:]...))
		wall[jobs[i].name] = append(wall[jobs[i].name], u.wall)
		rss[jobs[i].name] = append(rss[jobs[i].name], u.rssMiB)
	})
	for _, j := range jobs {
		fmt.Printf("   %-32s %8.2f s  %8.1f MiB peak RSS\n", j.name, median(wall[j.name]), median(rss[j.name]))
	}
	fmt.Printf("   report: sonde is %.1fx faster (goal ≥ 5) at %.2f of perf's RSS (goal ≤ 0.5)\n",
		median(wall["perf report --stdio"])/median(wall["sonde report"]), median(rss["sonde report"])/median(rss["perf report --stdio"]))
	fmt.Printf("   flame graph: sonde %.1fx faster than perf script alone, at %.2f of its RSS\n",
		median(wall["perf script (flame graph input)"])/median(wall["sonde flamegraph"]), median(rss["sonde flamegraph"])/median(rss["perf script (flame graph input)"]))
	fmt.Printf("   file size: perf.data %.1f B/sample, sonde.data %.1f B/sample\n", float64(size(perfData))/float64(np), float64(size(sondeData))/float64(ns))
	return ok
}

// runUnder runs the target with recorder c in the background and returns
// the target's own timing and the recorder's bytes per sample.
func runUnder(c, dir, spin string) (float64, float64) {
	var rec *exec.Cmd
	out := filepath.Join(dir, c+".data")
	switch c {
	case "perf":
		rec = exec.Command(*perfBin, "record", "-q", "-a", "-g", "-F", "999", "-o", out)
	case "sonde":
		// perf -g walks frame pointers: so does sonde here (section 8
		// measures the unwinder).
		rec = exec.Command(*sondeBin, "record", "-q", "-a", "--call-graph", "fp", "-F", "999", "-o", out)
	case "profile":
		rec = exec.Command(*sondeBin, "profile", "-a", "-F", "999", "-o", out)
	}
	if rec != nil {
		if err := rec.Start(); err != nil {
			fail(err.Error())
		}
		time.Sleep(700 * time.Millisecond) // let the recorder settle
	}
	res, err := exec.Command(spin, strconv.Itoa(*iters)).Output()
	if err != nil {
		fail(fmt.Sprintf("target: %v", err))
	}
	ms := parseElapsed(string(res))
	if rec == nil {
		return ms, 0
	}
	rec.Process.Signal(syscall.SIGINT)
	rec.Wait()
	n := 0
	if c == "profile" {
		return ms, 0
	}
	if c == "perf" {
		n = perfSamples(out)
	} else {
		n = sondeSamples(out)
	}
	if n == 0 {
		return ms, 0
	}
	return ms, float64(size(out)) / float64(n)
}

func parseElapsed(s string) float64 {
	m := regexp.MustCompile(`elapsed_ms ([0-9.]+)`).FindStringSubmatch(s)
	if m == nil {
		fail("target printed no timing: " + s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func perfSamples(path string) int {
	out, err := exec.Command(*perfBin, "script", "-i", path, "-F", "tid").Output()
	if err != nil {
		return 0
	}
	return bytes.Count(out, []byte("\n"))
}

func sondeSamples(path string) int {
	out, err := exec.Command(*sondeBin, "report", "-i", path, "--json", "-g", "none", "--sort", "comm").Output()
	if err != nil {
		return 0
	}
	var r struct{ Samples int }
	json.Unmarshal(out, &r)
	return r.Samples
}

// usage is what one run of a command took: wall seconds, peak RSS in
// MiB, and CPU seconds (user and system, of it and the children it
// waited for).
type usage struct{ wall, rssMiB, cpu float64 }

// measure runs cmd to its end and returns what it took.
func measure(cmd *exec.Cmd) usage {
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Sprintf("%s: %v", strings.Join(cmd.Args, " "), err))
	}
	wall := time.Since(start).Seconds()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return usage{wall, float64(ru.Maxrss) / 1024, float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9} // Linux's Maxrss is in KiB
}

func mustRun(args ...string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = nil
	if out, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Sprintf("%s: %v\n%s", strings.Join(args, " "), err, out))
	}
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// interleave runs each of n configurations reps times, rotating which
// goes first in each repetition so drift on the machine hits all alike,
// and shows the progress of what on stderr.
func interleave(what string, reps, n int, run func(i int)) {
	for r := 0; r < reps; r++ {
		for i := 0; i < n; i++ {
			run((i + r) % n)
		}
		fmt.Fprintf(os.Stderr, "\r%s: repetition %d/%d", what, r+1, reps)
	}
	fmt.Fprintln(os.Stderr)
}

// config is one way to run a workload: its name in the table and its
// command line.
type config struct {
	name string
	args []string
}

// selfTimed runs c, a workload that times itself, and returns the number
// it prints after key ("elapsed_ns N").
func selfTimed(c config, key string) float64 {
	out, err := exec.Command(c.args[0], c.args[1:]...).CombinedOutput()
	m := regexp.MustCompile(regexp.QuoteMeta(key) + ` (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		fail(fmt.Sprintf("%s: %v (no %q in its output)\n%s", c.name, err, key, out))
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// repoPath is a file of the repository, by its path from the root.
func repoPath(rel string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", rel)
}

// gcc compiles the repository's C file rel with flags into dir/name and
// returns that path.
func gcc(dir, name, rel string, flags ...string) string {
	out := filepath.Join(dir, name)
	args := append(append([]string{}, flags...), "-o", out, repoPath(rel))
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		fail(fmt.Sprintf("gcc %s: %v %s", rel, err, b))
	}
	return out
}

// systemLibc is where this architecture's Debian libc lives.
func systemLibc() string {
	if runtime.GOARCH == "arm64" {
		return "/lib/aarch64-linux-gnu/libc.so.6"
	}
	return "/lib/x86_64-linux-gnu/libc.so.6"
}

// libcProbes is a bpftrace program with LIBC in its probes' paths
// replaced by systemLibc.
func libcProbes(script string) string {
	return strings.ReplaceAll(script, "LIBC", systemLibc())
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "bench:", msg)
	os.Exit(1)
}

// seed002 measures seed 002's workload — a three-stage dd pipeline moving
// 1 KB blocks, tens of thousands of context switches a second — alone and
// under sonde cputime, interleaved.
func seed002() {
	pipeline := fmt.Sprintf("dd if=/dev/zero bs=1k count=%d 2>/dev/null | dd bs=1k 2>/dev/null | dd of=/dev/null bs=1k 2>/dev/null", *ddBlocks)
	var cpuBase, cpuUnder, ratesUnder []float64
	runOnce := func() (float64, float64, float64) {
		c0 := ctxt()
		// CPU time of the pipeline (sh and the dd processes it waited for):
		// the switch hook runs inside their context switches.
		u := measure(exec.Command("sh", "-c", pipeline))
		return u.wall, float64(ctxt()-c0) / u.wall, u.cpu
	}
	var base, under, rates []float64
	for r := 0; r < *reps; r++ {
		for i := 0; i < 2; i++ {
			if (i+r)%2 == 0 {
				time.Sleep(700 * time.Millisecond) // same pause as the other arm
				el, rate, cpu := runOnce()
				base = append(base, el)
				rates = append(rates, rate)
				cpuBase = append(cpuBase, cpu)
				continue
			}
			c := exec.Command(*sondeBin, "cputime", "-i", "1s")
			c.Stdout = nil
			if err := c.Start(); err != nil {
				fail(err.Error())
			}
			time.Sleep(700 * time.Millisecond)
			el, rate, cpu := runOnce()
			under = append(under, el)
			ratesUnder = append(ratesUnder, rate)
			cpuUnder = append(cpuUnder, cpu)
			c.Process.Signal(syscall.SIGINT)
			c.Wait()
		}
		fmt.Fprintf(os.Stderr, "\rseed 002: repetition %d/%d", r+1, *reps)
	}
	fmt.Fprintln(os.Stderr)
	b, u := median(base), median(under)
	fmt.Printf("\n4. Seed 002: three-stage dd pipeline, %d × 1 KB blocks (%d interleaved runs, medians)\n", *ddBlocks, *reps)
	fmt.Printf("   context switches: %.0f /s alone, %.0f /s under cputime\n", median(rates), median(ratesUnder))
	fmt.Printf("   wall time   alone %8.3f s   under cputime %8.3f s  %+.2f%% (goal < 1%%; seed: +2.8%% at 60,798 switches/s)\n", b, u, 100*(u/b-1))
	cb, cu := median(cpuBase), median(cpuUnder)
	fmt.Printf("   CPU time    alone %8.3f s   under cputime %8.3f s  %+.2f%%\n", cb, cu, 100*(cu/cb-1))
}

// ctxt reads the system's context-switch count from /proc/stat.
func ctxt() uint64 { return procStat("ctxt") }

// procStat reads one counter of /proc/stat by its name (0 when missing).
func procStat(name string) uint64 {
	b, _ := os.ReadFile("/proc/stat")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
