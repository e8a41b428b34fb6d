package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

var (
	flameStacks = flag.Int("flame-stacks", 1000000, "distinct folded stacks in the flame-graph case")
	flameReps   = flag.Int("flame-reps", 3, "interleaved runs of sonde and inferno in the flame-graph case")
	infernoBin  = flag.String("inferno", "", "inferno-flamegraph binary (default: from PATH, else ~/.cargo/bin)")
)

// Targets of issue 10 for a million distinct stacks.
const (
	flameMaxSeconds = 5.0
	flameMaxRSSMiB  = 500.0
	flameMaxHTMLMiB = 10.0
)

// flameScale writes -flame-stacks distinct folded stacks to a file (see
// folded.go) and draws them: `sonde flamegraph` to HTML once, against issue
// 10's targets (wall time, peak RSS from wait4's rusage, page size), then
// sonde and inferno-flamegraph to SVG, interleaved, against each other
// (issue 25: faster and smaller than inferno on the same input). Then the
// same beside inferno for stacks of the second shape, deep distinct tails.
func flameScale(dir string) bool {
	in := filepath.Join(dir, "stacks.folded")
	lines, bytes, deepest, mean := writeFoldedStacks(in, *flameStacks, false)
	out := filepath.Join(dir, "flame.html")
	cmd := exec.Command(*sondeBin, "flamegraph", "-i", in, "-o", out)
	cmd.Stderr = os.Stderr
	u := measure(cmd)
	secs, rss, cpu := u.wall, u.rssMiB, u.cpu
	html := float64(size(out)) / (1 << 20)
	fmt.Printf("\n5. Flame graph of %d distinct folded stacks (%d lines, %.0f MiB, unsorted, %.1f frames deep on average, at most %d)\n", *flameStacks, lines, float64(bytes)/(1<<20), mean, deepest)
	fmt.Printf("   to HTML:  %s\n", prunedNote(out))
	fmt.Printf("   time      %8.2f s    target ≤ %.0f s    %s\n", secs, flameMaxSeconds, verdict(secs <= flameMaxSeconds))
	// On a shared machine the wall time depends on the other load; the
	// CPU time says what sonde itself needed.
	fmt.Printf("   CPU time  %8.2f s    (user + system; load average %s on %d CPUs)\n", cpu, loadAvg(), runtime.NumCPU())
	fmt.Printf("   peak RSS  %8.1f MiB  target ≤ %.0f MiB  %s\n", rss, flameMaxRSSMiB, verdict(rss <= flameMaxRSSMiB))
	fmt.Printf("   HTML      %8.2f MiB  target ≤ %.0f MiB   %s\n", html, flameMaxHTMLMiB, verdict(html <= flameMaxHTMLMiB))
	ok := secs <= flameMaxSeconds && rss <= flameMaxRSSMiB && html <= flameMaxHTMLMiB
	ok = beside(dir, in) && ok
	lines, bytes, deepest, mean = writeFoldedStacks(in, *flameStacks, true)
	fmt.Printf("\n   Second shape, deep distinct tails: %d stacks sharing their top 7 frames, then their own (%d lines, %.0f MiB, %.1f frames deep on average, at most %d)\n", *flameStacks, lines, float64(bytes)/(1<<20), mean, deepest)
	return beside(dir, in) && ok
}

// beside draws the stacks to SVG with sonde and with inferno-flamegraph,
// -flame-reps times each, interleaved, each at its default minimum width
// (sonde 0.1 px, 0.0085% of 1200 px; inferno 0.01%, so sonde draws a
// little more), and checks that both graphs have the same total.
func beside(dir, in string) bool {
	inferno := findInferno()
	if inferno == "" {
		fmt.Println("   inferno-flamegraph not found (cargo install inferno, or -inferno PATH): not compared")
		return true
	}
	svg := [2]string{filepath.Join(dir, "sonde.svg"), filepath.Join(dir, "inferno.svg")}
	var runs [2][]usage
	interleave("flame graphs", *flameReps, 2, func(i int) {
		var cmd *exec.Cmd
		if i == 0 {
			cmd = exec.Command(*sondeBin, "flamegraph", "-i", in, "-o", svg[0])
		} else {
			f, err := os.Create(svg[1])
			if err != nil {
				fail(err.Error())
			}
			defer f.Close()
			cmd = exec.Command(inferno, in)
			cmd.Stdout = f
		}
		cmd.Stderr = os.Stderr
		runs[i] = append(runs[i], measure(cmd))
	})
	med := func(i int, f func(usage) float64) float64 {
		var v []float64
		for _, u := range runs[i] {
			v = append(v, f(u))
		}
		return median(v)
	}
	wall := func(u usage) float64 { return u.wall }
	cpu := func(u usage) float64 { return u.cpu }
	rss := func(u usage) float64 { return u.rssMiB }
	totals := [2]string{sondeTotal(svg[0]), infernoTotal(svg[1])}
	fmt.Printf("   beside inferno-flamegraph, both to SVG (%d interleaved runs each, medians):\n", *flameReps)
	fmt.Printf("   %-9s %8s %8s %10s %9s  %s\n", "", "wall s", "CPU s", "peak RSS", "SVG MiB", "total weight drawn")
	for i, name := range []string{"sonde", "inferno"} {
		fmt.Printf("   %-9s %8.2f %8.2f %6.0f MiB %9.2f  %s\n", name, med(i, wall), med(i, cpu), med(i, rss), float64(size(svg[i]))/(1<<20), totals[i])
	}
	tr, rr := med(0, wall)/med(1, wall), med(0, rss)/med(1, rss)
	ok := tr < 1 && rr < 1 && totals[0] == totals[1] && totals[0] != ""
	fmt.Printf("   sonde/inferno: time %.2f, CPU %.2f, peak RSS %.2f (target < 1 each, same total)  %s\n", tr, med(0, cpu)/med(1, cpu), rr, verdict(ok))
	return ok
}

// findInferno is -inferno, else inferno-flamegraph from PATH or cargo's
// directory, else "".
func findInferno() string {
	if *infernoBin != "" {
		return *infernoBin
	}
	if p, err := exec.LookPath("inferno-flamegraph"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cargo", "bin", "inferno-flamegraph")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

var (
	sondeTotalRE   = regexp.MustCompile(`"v":\[([0-9.]+)`)
	infernoTotalRE = regexp.MustCompile(`<title>all \(([0-9,.]+) samples`)
	prunedRE       = regexp.MustCompile(`<!-- (.*) -->`)
)

// sondeTotal is the weight of the root frame sonde drew, as inferno
// writes it (with thousands separators).
func sondeTotal(path string) string {
	b, _ := os.ReadFile(path)
	m := sondeTotalRE.FindSubmatch(b)
	if m == nil {
		return ""
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return ""
	}
	return thousands(int64(v))
}

func infernoTotal(path string) string {
	b, _ := os.ReadFile(path)
	if m := infernoTotalRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

// prunedNote is what sonde's graph says it left out.
func prunedNote(path string) string {
	b, _ := os.ReadFile(path)
	if m := prunedRE.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return "every frame drawn"
}

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// loadAvg is the one-minute load average.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// webScale runs internal/service/web's TestWebScale: sonde serve on a 1 M-sample
// recording in headless Chromium, first paint ≤ 1 s, zoom ≤ 100 ms,
// server peak RSS ≤ 2× the model (issue 16's targets). It is a test so the
// browser driver stays out of the bench binary.
func webScale() bool {
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestWebScale$", "./internal/service/web")
	cmd.Dir = repoPath(".")
	cmd.Env = append(os.Environ(), "SONDE_WEB_SCALE=1")
	out, err := cmd.CombinedOutput()
	fmt.Printf("\n9. Web view of a 1 M-sample recording (sonde serve in headless Chromium)\n")
	for _, l := range strings.Split(string(out), "\n") {
		if _, msg, ok := strings.Cut(l, "scale_test.go:"); ok {
			_, msg, _ = strings.Cut(msg, ": ")
			fmt.Println("  ", msg)
		}
	}
	if err != nil {
		fmt.Printf("   FAILED: %v\n", err)
		return false
	}
	return true
}
