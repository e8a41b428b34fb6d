package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

var flameStacks = flag.Int("flame-stacks", 1000000, "distinct folded stacks in the flame-graph case")

// Targets of issue 10 for a million distinct stacks.
const (
	flameMaxSeconds = 5.0
	flameMaxRSSMiB  = 500.0
	flameMaxHTMLMiB = 10.0
)

// flameScale writes -flame-stacks distinct folded stacks to a file and
// times `sonde flamegraph` drawing them as HTML: wall time, peak RSS (the
// child's rusage, from wait4) and the size of the page, each against its
// target.
func flameScale(dir string) bool {
	in := filepath.Join(dir, "stacks.folded")
	lines, bytes := writeStacks(in, *flameStacks)
	out := filepath.Join(dir, "flame.html")
	cmd := exec.Command(*sondeBin, "flamegraph", "-i", in, "-o", out)
	cmd.Stderr = os.Stderr
	u := measure(cmd)
	secs, rss, cpu := u.wall, u.rssMiB, u.cpu
	html := float64(size(out)) / (1 << 20)
	verdict := func(ok bool) string {
		if ok {
			return "pass"
		}
		return "FAIL"
	}
	fmt.Printf("\n5. Flame graph of %d distinct folded stacks (%d lines, %.0f MiB, unsorted) to HTML\n", *flameStacks, lines, float64(bytes)/(1<<20))
	fmt.Printf("   time      %8.2f s    target ≤ %.0f s    %s\n", secs, flameMaxSeconds, verdict(secs <= flameMaxSeconds))
	// On a shared machine the wall time depends on the other load; the
	// CPU time says what sonde itself needed.
	fmt.Printf("   CPU time  %8.2f s    (user + system; load average %s on %d CPUs)\n", cpu, loadAvg(), runtime.NumCPU())
	fmt.Printf("   peak RSS  %8.1f MiB  target ≤ %.0f MiB  %s\n", rss, flameMaxRSSMiB, verdict(rss <= flameMaxRSSMiB))
	fmt.Printf("   HTML      %8.2f MiB  target ≤ %.0f MiB   %s\n", html, flameMaxHTMLMiB, verdict(html <= flameMaxHTMLMiB))
	return secs <= flameMaxSeconds && rss <= flameMaxRSSMiB && html <= flameMaxHTMLMiB
}

// writeStacks writes n distinct stacks shaped like a server's profile: a
// few processes, a common startup prefix, then one level of the call tree
// per decimal digit of the stack's number (a handler chosen by the digit and
// a library call under it, names drawn from shared pools as real code
// reuses functions), some stacks ending in kernel frames. Stack numbers go
// through a permutation, so the lines are not sorted and consecutive lines
// rarely share a prefix. Counts are 1–50, every tenth with a fraction.
func writeStacks(path string, n int) (lines int, size int64) {
	f, err := os.Create(path)
	if err != nil {
		fail(err.Error())
	}
	w := bufio.NewWriterSize(f, 1<<20)
	digits := len(strconv.Itoa(n - 1))
	// x → (a·x + c) mod n visits every x once when gcd(a, n) = 1.
	a := 7919
	for gcd(a, n) != 1 {
		a++
	}
	var line []byte
	for i := 0; i < n; i++ {
		x := (a*i + 12345) % n
		line = line[:0]
		h := uint32(2166136261)
		mix := func(v int) uint32 {
			h = (h ^ uint32(v)) * 16777619
			return h
		}
		num := strconv.Itoa(x)
		for len(num) < digits {
			num = "0" + num
		}
		line = append(line, "svc"...)
		line = strconv.AppendInt(line, int64(num[0]-'0')%4, 10)
		line = append(line, ";_start;__libc_start_main;main;server::run"...)
		for l := 0; l < digits; l++ {
			d := int(num[l] - '0')
			mix(l*10 + d)
			line = append(line, ";mod"...)
			line = strconv.AppendInt(line, int64(l), 10)
			line = append(line, "::handle_"...)
			line = strconv.AppendInt(line, int64(d), 10)
			line = append(line, ";lib::call_"...)
			line = strconv.AppendInt(line, int64(mix(d)%997), 10)
		}
		if h%4 == 0 {
			line = append(line, ";entry_SYSCALL_64_[k];do_syscall_64_[k];ksys_read_[k]"...)
		}
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(1+h%50), 10)
		if x%10 == 0 {
			line = append(line, ".5"...)
		}
		line = append(line, '\n')
		w.Write(line)
		size += int64(len(line))
		lines++
	}
	if err := w.Flush(); err != nil {
		fail("writing stacks: " + err.Error())
	}
	if err := f.Close(); err != nil {
		fail("writing stacks: " + err.Error())
	}
	return lines, size
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
