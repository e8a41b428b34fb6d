package main

// record -g through the BPF unwinder (--call-graph auto), against
// workloads whose true stacks are known.

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// recordFolded records args (after "record -q -o FILE") and returns the
// folded stacks and record's stderr.
func recordFolded(t *testing.T, dir, name string, args ...string) (map[string]uint64, string) {
	t.Helper()
	data := filepath.Join(dir, name+".data")
	r := testutil.MustRun(t, dir, append([]string{"record", "-o", data}, args...)...)
	f := testutil.MustRun(t, dir, "flamegraph", "-i", data, "--format", "folded")
	return folded(t, f.Stdout), r.Stderr
}

// TestRecordUnwindsWithoutFramePointers: record -g (auto) on main →
// dispatch → {heavy, light}, 3:1, built without frame pointers and with
// them: heavy/light within 3 points of 75/25 under the full chain, ≥ 95%
// of samples reaching main. The kernel's frame-pointer walk of the no-fp
// build is printed beside it.
func TestRecordUnwindsWithoutFramePointers(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	builds := map[string]string{
		"no-fp": testutil.BuildC(t, dir, "unwind-nofp", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer"),
		"fp":    testutil.BuildC(t, dir, "unwind-fp", []string{"unwind.c"}, "-O2", "-fno-omit-frame-pointer"),
	}
	for _, name := range []string{"no-fp", "fp"} {
		t.Run(name, func(t *testing.T) {
			st, stderr := recordFolded(t, dir, name, "-g", "-F", "999", "--", builds[name], "3")
			if !strings.Contains(stderr, "call graph: auto") || !regexp.MustCompile(`user stacks complete: \d`).MatchString(stderr) {
				t.Errorf("record -g does not say which call graph ran and how complete it is:\n%s", stderr)
			}
			var heavy, light uint64
			for s, n := range st {
				switch {
				case strings.HasSuffix(s, ";main;dispatch;heavy"):
					heavy += n
				case strings.HasSuffix(s, ";main;dispatch;light"):
					light += n
				}
			}
			hit, total := reaching(st, "main")
			t.Logf("record -g %s: heavy %d, light %d, %d of %d samples reach main\n%s", name, heavy, light, hit, total, stderr)
			if heavy+light < 900 {
				t.Fatalf("only %d samples of main;dispatch;{heavy,light} in 3 s at 999 Hz", heavy+light)
			}
			if pct := 100 * float64(heavy) / float64(heavy+light); pct < 72 || pct > 78 {
				t.Errorf("heavy %.1f%% of heavy+light, want 75 ± 3", pct)
			}
			if pct := 100 * float64(hit) / float64(total); pct < 95 {
				t.Errorf("%.1f%% of samples reach main, want ≥ 95%%", pct)
			}
		})
	}
	st, _ := recordFolded(t, dir, "fp-mode", "--call-graph", "fp", "-F", "999", "--", builds["no-fp"], "1")
	hit, total := reaching(st, "main")
	t.Logf("record --call-graph fp of the no-fp build: %d of %d samples reach main", hit, total)
}

// TestRecordUprobeNamesCaller: a user probe fires at a function's first
// instruction, before it sets up a frame: the frame-pointer walk skips
// its caller, the unwinder must not.
func TestRecordUprobeNamesCaller(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "unwind-nofp", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	count := func(st map[string]uint64) (caller, all uint64) {
		for s, n := range st {
			if strings.HasSuffix(s, ";heavy") {
				all += n
				if strings.HasSuffix(s, ";main;dispatch;heavy") {
					caller += n
				}
			}
		}
		return caller, all
	}
	st, stderr := recordFolded(t, dir, "auto", "-e", "u:"+bin+":heavy", "-g", "--", bin, "2")
	caller, all := count(st)
	fst, _ := recordFolded(t, dir, "fp", "-e", "u:"+bin+":heavy", "--call-graph", "fp", "--", bin, "0.3")
	fcaller, fall := count(fst)
	t.Logf("uprobe on heavy: main;dispatch;heavy in %d of %d stacks with -g, %d of %d with --call-graph fp\n%s", caller, all, fcaller, fall, stderr)
	if all < 100 {
		t.Fatalf("only %d probe hits on heavy", all)
	}
	if pct := 100 * float64(caller) / float64(all); pct < 95 {
		t.Errorf("%.1f%% of the probe's stacks name dispatch and main, want ≥ 95%%", pct)
	}
}

// TestRecordTracepointAndSamplesPaired: a run that mixes a tracepoint
// with a sampling event walks both (two programs writing into the same
// rings) and pairs every stack with its own sample.
func TestRecordTracepointAndSamplesPaired(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "unwind-fp", []string{"unwind.c"}, "-O2", "-fno-omit-frame-pointer")
	st, stderr := recordFolded(t, dir, "tp", "-e", "syscalls:sys_enter_exit_group,cpu-clock", "-g", "--", bin, "0.5")
	var exits, heavy uint64
	for s, n := range st {
		switch {
		case strings.HasSuffix(s, ";_exit") || strings.Contains(s, ";_exit;"):
			exits += n
		case strings.HasSuffix(s, ";main;dispatch;heavy"):
			heavy += n
		}
	}
	t.Logf("exit_group stacks %d, cpu-clock main;dispatch;heavy %d\n%s", exits, heavy, stderr)
	if exits == 0 {
		t.Errorf("no exit_group stack through _exit: %v", st)
	}
	if heavy == 0 {
		t.Errorf("no cpu-clock sample of main;dispatch;heavy: %v", st)
	}
	if strings.Contains(stderr, "without their walked stack") {
		t.Errorf("samples went unpaired:\n%s", stderr)
	}
}
