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
//     page size against issue 10's targets; -flamegraph runs only this);
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
//     runs only this).
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
	sondeBin   = flag.String("sonde", "out/sonde", "sonde binary")
	perfBin    = flag.String("perf", "perf", "perf binary")
	reps       = flag.Int("reps", 7, "repetitions of each slowdown configuration")
	iters      = flag.Int("iters", 8000000, "target iterations (about 2 s here)")
	samples    = flag.Int("samples", 1000000, "samples in the big recording")
	bigFreq    = flag.Int("big-freq", 25000, "sampling rate for the big recording")
	skipBig    = flag.Bool("skip-big", false, "skip the big-recording report benchmark")
	only002    = flag.Bool("seed002", false, "run only the cputime benchmark")
	ddBlocks   = flag.Int("dd-blocks", 300000, "1 KB blocks through the seed 002 pipeline")
	onlyFt     = flag.Bool("ftrace", false, "run only the function-graph tracing benchmark")
	ftraceReps = flag.Int("ftrace-reps", 5, "repetitions of each function-graph tracing configuration")
)

func main() {
	flag.Parse()
	if *onlyWeb {
		if !webScale() {
			os.Exit(1)
		}
		return
	}
	if *onlyFlame {
		dir, err := os.MkdirTemp("", "sonde-bench")
		if err != nil {
			fail(err.Error())
		}
		ok := flameScale(dir)
		os.RemoveAll(dir)
		if !ok {
			os.Exit(1)
		}
		return
	}
	if os.Geteuid() != 0 {
		fail("bench records system-wide: run as root")
	}
	if _, err := exec.LookPath(*perfBin); err != nil {
		fail("perf not found: apt-get install linux-perf")
	}
	dir, err := os.MkdirTemp("", "sonde-bench")
	if err != nil {
		fail(err.Error())
	}
	defer os.RemoveAll(dir)
	spin := filepath.Join(dir, "spin")
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", "spin.c")
	if out, err := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", spin, src).CombinedOutput(); err != nil {
		fail(fmt.Sprintf("gcc: %v %s", err, out))
	}
	fmt.Printf("sonde bench: %s, %d CPUs, kernel %s\n\n", time.Now().Format(time.RFC3339), runtime.NumCPU(), kernel())
	if *onlyMemleak {
		memleakCost(dir)
		return
	}
	if *onlyDeadlock {
		deadlockCost(dir)
		return
	}
	if *only002 {
		seed002()
		return
	}
	if *onlyFt {
		ftraceBench(dir)
		return
	}
	if *onlyUnwind {
		unwindBench(dir)
		return
	}
	if *onlyAgent {
		agentOverhead(dir, spin)
		return
	}
	if *onlyCost {
		costTable(dir)
		return
	}

	// 1 and 2: slowdown and bytes per sample.
	configs := []string{"none", "perf", "sonde", "profile"}
	elapsed := map[string][]float64{}
	bytesPer := map[string][]float64{}
	for r := 0; r < *reps; r++ {
		for i := range configs {
			c := configs[(i+r)%len(configs)]
			ms, bps := runUnder(c, dir, spin)
			elapsed[c] = append(elapsed[c], ms)
			if bps > 0 {
				bytesPer[c] = append(bytesPer[c], bps)
			}
		}
		fmt.Fprintf(os.Stderr, "\rslowdown: repetition %d/%d", r+1, *reps)
	}
	fmt.Fprintln(os.Stderr)
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

	seed002()
	ftraceBench(dir)
	memleakCost(dir)
	flameScale(dir)
	costTable(dir)
	deadlockCost(dir)
	agentOverhead(dir, spin)
	unwindBench(dir)
	webScale()
	if *skipBig {
		return
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
	type job struct {
		name string
		args []string
	}
	jobs := []job{
		{"perf report --stdio", []string{*perfBin, "report", "--stdio", "-i", perfData}},
		{"sonde report", []string{*sondeBin, "report", "-i", sondeData}},
		{"perf script (flame graph input)", []string{*perfBin, "script", "-i", perfData}},
		{"sonde flamegraph", []string{*sondeBin, "flamegraph", "-i", sondeData, "-o", filepath.Join(dir, "f.html")}},
	}
	wall := map[string][]float64{}
	rss := map[string][]float64{}
	for r := 0; r < 3; r++ {
		for i := range jobs {
			j := jobs[(i+r)%len(jobs)]
			w, m := timed(j.args)
			wall[j.name] = append(wall[j.name], w)
			rss[j.name] = append(rss[j.name], m)
		}
	}
	for _, j := range jobs {
		fmt.Printf("   %-32s %8.2f s  %8.1f MiB peak RSS\n", j.name, median(wall[j.name]), median(rss[j.name]))
	}
	fmt.Printf("   report: sonde is %.1fx faster (goal ≥ 5) at %.2f of perf's RSS (goal ≤ 0.5)\n",
		median(wall["perf report --stdio"])/median(wall["sonde report"]), median(rss["sonde report"])/median(rss["perf report --stdio"]))
	fmt.Printf("   flame graph: sonde %.1fx faster than perf script alone, at %.2f of its RSS\n",
		median(wall["perf script (flame graph input)"])/median(wall["sonde flamegraph"]), median(rss["sonde flamegraph"])/median(rss["perf script (flame graph input)"]))
	fmt.Printf("   file size: perf.data %.1f B/sample, sonde.data %.1f B/sample\n", float64(size(perfData))/float64(np), float64(size(sondeData))/float64(ns))
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

func timed(args []string) (float64, float64) {
	cmd := exec.Command(args[0], args[1:]...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Sprintf("%s: %v", strings.Join(args, " "), err))
	}
	w := time.Since(start).Seconds()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return w, float64(ru.Maxrss) / 1024
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
		start := time.Now()
		cmd := exec.Command("sh", "-c", pipeline)
		if err := cmd.Run(); err != nil {
			fail("pipeline: " + err.Error())
		}
		el := time.Since(start).Seconds()
		// CPU time of the pipeline (sh and the dd processes it waited for):
		// the switch hook runs inside their context switches.
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		return el, float64(ctxt()-c0) / el, cpu
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
func ctxt() uint64 {
	b, _ := os.ReadFile("/proc/stat")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ctxt "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
