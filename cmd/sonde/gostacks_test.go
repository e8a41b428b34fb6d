package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// goRoot is where a Go stack begins, as the runtime's traceback and perf
// see it: a goroutine (goexit), a thread (mstart, rt0_go), a signal
// handler (sigtramp), the g0 work of mcall and morestack.
var goRoot = regexp.MustCompile(`^(runtime\.(goexit|mstart|rt0_go|sigtramp|sigreturn__sigaction|mcall|morestack)(\.abi0)?|_rt0_\w+)$`)

// inventedFrame is a frame no Go stack holds: a stack or anonymous
// region, the heap, or an unnamed address inside the binary (data).
var inventedFrame = regexp.MustCompile(`^\[(stack|heap|anon)|\+0x[0-9a-f]+$|^\[unknown\]`)

// goUserStacks reads folded stacks and counts, over the samples with a
// user stack, those whose outermost user frame is a Go root; it names up
// to 5 invented frames.
func goUserStacks(t *testing.T, folded string) (rooted, total uint64, invented []string) {
	t.Helper()
	for s, n := range foldedStacks(t, folded) {
		var user []string
		for _, f := range strings.Split(s, ";")[1:] {
			if !strings.HasSuffix(f, "_[k]") {
				user = append(user, f)
			}
		}
		if len(user) == 0 {
			continue
		}
		total += n
		if goRoot.MatchString(user[0]) {
			rooted += n
		}
		for _, f := range user {
			if inventedFrame.MatchString(f) && len(invented) < 5 {
				invented = append(invented, f)
			}
		}
	}
	return rooted, total, invented
}

func foldedStacks(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	if strings.TrimSpace(out) == "" {
		return nil
	}
	return folded(t, out)
}

// TestGoStacksReachRoots: Go programs' stacks, walked by sonde's default
// unwinder, reach the runtime's roots as often as perf's frame-pointer
// walk of the same binary (and 99% of the time), across the runtime's
// stack switches; no frame is invented; the report's completeness agrees
// with the count. A CPU hog runs beside.
func TestGoStacksReachRoots(t *testing.T) {
	perfBin := testutil.RequireTool(t, "perf", "linux-perf")
	dir, bin := testutil.GoWorkload(t, "gostacks", "gostacks")
	cpuHog(t)
	for _, mode := range []string{"cpu", "timers", "gc"} {
		t.Run(mode, func(t *testing.T) {
			data := dir + "/" + mode + ".data"
			testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "999", "-o", data, "--", bin, mode, "2")
			sf := foldedOf(t, dir, data)
			rooted, total, invented := goUserStacks(t, sf)

			pdata := dir + "/" + mode + ".perf"
			if out, err := exec.Command(perfBin, "record", "-q", "--call-graph", "fp", "-F", "999", "-o", pdata, "--", bin, mode, "2").CombinedOutput(); err != nil {
				t.Fatalf("perf record: %v\n%s", err, out)
			}
			pf := foldedOf(t, dir, pdata)
			prooted, ptotal, _ := goUserStacks(t, pf)

			share, pshare := pct(rooted, total), pct(prooted, ptotal)
			rep := reportJSON(t, dir, "-i", data)
			var line float64 = -1
			if us := rep.Meta.UserStacks; us != nil && us.Total > 0 {
				line = pct(us.Complete, us.Total)
			}
			t.Logf("%s: sonde %d of %d user stacks reach a root (%.1f%%, completeness line %.1f%%); perf fp %d of %d (%.1f%%)",
				mode, rooted, total, share, line, prooted, ptotal, pshare)
			if total < 200 {
				t.Fatalf("only %d samples with a user stack", total)
			}
			if share < 99 || share < pshare-1 {
				t.Errorf("%.1f%% of sonde's stacks reach a root, want ≥ 99%% and ≥ perf's %.1f%% − 1", share, pshare)
			}
			if len(invented) > 0 {
				t.Errorf("invented frames: %q", invented)
			}
			if line >= 0 && (line-share > 1 || share-line > 1) {
				t.Errorf("the completeness line says %.1f%%, the stacks %.1f%%", line, share)
			}
		})
	}
}

func pct(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}
