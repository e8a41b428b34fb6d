package main

// Tests of the BPF user-stack walker through the tools that use it,
// against workloads whose true stacks are known.

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// folded parses --folded output: "comm;outer;…;leaf count" lines.
func folded(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		m[line[:i]] += n
	}
	if len(m) == 0 {
		t.Fatalf("no stacks in:\n%s", out)
	}
	return m
}

// reaching sums the stacks that contain one of frames, and all stacks.
func reaching(stacks map[string]uint64, frames ...string) (hit, total uint64) {
	for s, n := range stacks {
		total += n
		for _, f := range strings.Split(s, ";")[1:] {
			if slices.Contains(frames, f) {
				hit += n
				break
			}
		}
	}
	return hit, total
}

// unwindBuilds skips without privileges, then builds testdata/unwind.c
// at -O2 into a fresh directory once per variant asked for: "no-fp"
// (-fomit-frame-pointer), "fp", and "stripped" (no-fp without DWARF or
// a symbol table but for main, dispatch, heavy and light: the names come
// from a copy that keeps its symbols, as a debug file would give them,
// and .eh_frame stays).
func unwindBuilds(t *testing.T, variants ...string) (string, map[string]string) {
	t.Helper()
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	fp := map[string]string{"no-fp": "-fomit-frame-pointer", "fp": "-fno-omit-frame-pointer", "stripped": "-fomit-frame-pointer"}
	builds := map[string]string{}
	for _, v := range variants {
		builds[v] = testutil.BuildC(t, dir, "unwind-"+strings.ReplaceAll(v, "-", ""), []string{"unwind.c"}, "-O2", fp[v])
	}
	if bin, ok := builds["stripped"]; ok {
		testutil.Tool(t, "strip", "--keep-symbol=main", "--keep-symbol=dispatch", "--keep-symbol=heavy", "--keep-symbol=light", "-g", bin)
		if b := testutil.Tool(t, "readelf", "-S", bin); strings.Contains(b, ".debug_") {
			t.Fatalf("the stripped build still has debug sections:\n%s", b)
		}
	}
	return dir, builds
}

// checkDispatchSplit checks stacks of testdata/unwind.c, whose main →
// dispatch → {heavy, light} split 3:1: at least min samples in the two,
// heavy 75% ± 3 of them, ≥ 95% of all samples reaching main. detail is
// the run's output, shown with the counts.
func checkDispatchSplit(t *testing.T, what string, st map[string]uint64, min uint64, detail string) {
	t.Helper()
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
	t.Logf("%s: heavy %d, light %d, %d of %d samples reach main", what, heavy, light, hit, total)
	if heavy+light < min {
		t.Fatalf("%s: only %d samples of main;dispatch;{heavy,light}, want ≥ %d:\n%s", what, heavy+light, min, detail)
	}
	if pct := 100 * float64(heavy) / float64(heavy+light); pct < 72 || pct > 78 {
		t.Errorf("%s: heavy %.1f%% of heavy+light, want 75 ± 3", what, pct)
	}
	if pct := 100 * float64(hit) / float64(total); pct < 95 {
		t.Errorf("%s: %.1f%% of samples reach main, want ≥ 95%%", what, pct)
	}
}

// TestProfileUnwindsWithoutFramePointers: main → dispatch → {heavy, light}
// split 3:1, built without frame pointers, with them, and stripped.
// profile must give 75/25 within 3 points with the full chain, and ≥ 95%
// of samples must reach main.
func TestProfileUnwindsWithoutFramePointers(t *testing.T) {
	dir, builds := unwindBuilds(t, "no-fp", "fp", "stripped")
	for _, name := range []string{"no-fp", "fp", "stripped"} {
		t.Run(name, func(t *testing.T) {
			w := testutil.Start(t, builds[name], "6")
			r := testutil.MustRun(t, dir, "profile", "-F", "999", "-p", strconv.Itoa(w.Process.Pid), "-d", "2s", "--user", "--folded")
			st := folded(t, r.Stdout)
			checkDispatchSplit(t, "profile "+name+" (2 s at 999 Hz)", st, 600, r.Stdout)
		})
	}
}

// perfScriptReaching counts perf script samples whose stack has one of
// frames, and all samples.
func perfScriptReaching(t *testing.T, out string, frames ...string) (hit, total int) {
	t.Helper()
	re := regexp.MustCompile(`^\s+[0-9a-f]+ ([^\s+]+)`)
	in, found := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if in && found {
				hit++
			}
			in, found = false, false
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			in = true
			total++
			continue
		}
		if m := re.FindStringSubmatch(line); m != nil && slices.Contains(frames, m[1]) {
			found = true
		}
	}
	if in && found {
		hit++
	}
	return hit, total
}

// TestProfileUnwindsPython: Debian's python3 has no frame pointers. A
// pure-Python loop must reach main in ≥ 95% of samples; perf's DWARF mode
// (8 KB stack copies) on the same workload is printed beside it. python's
// main tail-calls Py_BytesMain, so that is the frame that stands for it.
func TestProfileUnwindsPython(t *testing.T) {
	testutil.RequirePrivileged(t)
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s: %v", py, err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "loop.py")
	src := "import json, re, time\n" +
		"def work(n):\n" +
		"    s = 0\n" +
		"    for i in range(n):\n" +
		"        s += len(json.dumps({'k': i, 'v': [i, str(i)]})) + len(re.findall(r'\\d', str(i * i)))\n" +
		"    return s\n" +
		"end = time.time() + 8\n" +
		"while time.time() < end:\n" +
		"    work(1000)\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w := testutil.Start(t, py, script)
	pid := strconv.Itoa(w.Process.Pid)
	r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", pid, "-d", "2500ms", "--user", "--folded")
	st := folded(t, r.Stdout)
	hit, total := reaching(st, "main", "Py_BytesMain")
	sondePct := 100 * float64(hit) / float64(total)

	perfPct := -1.0
	if perf, ok := testutil.HaveTool("perf"); ok {
		data := filepath.Join(dir, "perf.data")
		if _, err := testutil.TryTool(perf, "record", "-q", "--call-graph", "dwarf", "-F", "499", "-p", pid, "-o", data, "--", "sleep", "2.5"); err != nil {
			t.Logf("perf record --call-graph dwarf: %v", err)
		} else if out, err := testutil.TryTool(perf, "script", "-i", data, "-F", "comm,pid,ip,sym"); err == nil {
			h, n := perfScriptReaching(t, out, "main", "Py_BytesMain")
			if n > 0 {
				perfPct = 100 * float64(h) / float64(n)
			}
		}
	}
	t.Logf("python3 pure-Python loop, samples reaching main: sonde profile %.1f%% (%d of %d), perf --call-graph dwarf %.1f%%", sondePct, hit, total, perfPct)
	if total < 300 {
		t.Fatalf("only %d samples in 2.5 s at 499 Hz", total)
	}
	if sondePct < 95 {
		t.Errorf("%.1f%% of python3's samples reach main, want ≥ 95%%", sondePct)
	}
}

// TestProfileSaysHowCompleteStacksAre: the text report carries the line.
func TestProfileSaysHowCompleteStacksAre(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	w := testutil.Start(t, bin, "60")
	r := testutil.MustRun(t, dir, "profile", "-F", "199", "-p", strconv.Itoa(w.Process.Pid), "-d", "1s")
	m := regexp.MustCompile(`# user stacks complete: ([0-9.]+)%`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("no completeness line in:\n%s", r.Stdout)
	}
	if pct, _ := strconv.ParseFloat(m[1], 64); pct < 95 {
		t.Errorf("stacks complete: %s%%, want ≥ 95%%:\n%s", m[1], r.Stdout)
	}
}

// chainShare is the share of blocked time, among stacks whose user part
// has a frame matching leaf, whose user frames also name want in order
// (innermost first), and that total.
func chainShare(stacks []offcpuStack, leaf string, want ...string) (in, total float64) {
	for _, s := range stacks {
		var user []string
		for _, f := range s.Frames {
			if f.Sym == "--" {
				user = nil // wakeup: the blocked stack follows the separator
				continue
			}
			if !f.Kernel {
				user = append(user, f.Sym)
			}
		}
		i := 0
		for i < len(user) && user[i] != leaf {
			i++
		}
		if i == len(user) {
			continue
		}
		total += s.BlockedNS
		if i+len(want) < len(user) && strings.Join(user[i+1:i+1+len(want)], ";") == strings.Join(want, ";") {
			in += s.BlockedNS
		}
	}
	return in, total
}

type offcpuStack = struct {
	Comm      string  `json:"comm"`
	Pid       int     `json:"pid"`
	BlockedNS float64 `json:"blocked_ns"`
	Frames    []struct {
		Sym    string `json:"sym"`
		Kernel bool   `json:"kernel"`
	} `json:"frames"`
}

// TestOffcpuWakeupUnwindPollCaller: seed 004's server waits for DNS in
// glibc's poll, which keeps no frame, so a frame-pointer walk skips its
// caller. With the unwinder, offcpu and wakeup show poll ← dns_query ←
// reverse_lookup ← serve for ≥ 95% of the time blocked in poll.
func TestOffcpuWakeupUnwindPollCaller(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	pid, _, _ := dnsSetup(t, dir, false)
	p := strconv.Itoa(pid)
	for _, tool := range []string{"offcpu", "wakeup"} {
		o := offcpuRun(t, dir, tool, "-p", p, "-d", "2s", "--json")
		stacks := make([]offcpuStack, len(o.Stacks))
		for i, s := range o.Stacks {
			stacks[i] = offcpuStack(s)
		}
		in, total := chainShare(stacks, "poll", "dns_query", "reverse_lookup", "serve")
		t.Logf("%s: %.0f of %.0f ns blocked in poll under dns_query → reverse_lookup → serve (%.1f%%)", tool, in, total, 100*in/max(total, 1))
		if total == 0 || in/total < 0.95 {
			t.Errorf("%s: poll ← dns_query ← reverse_lookup ← serve holds %.1f%% of the time blocked in poll, want ≥ 95%%", tool, 100*in/max(total, 1))
		}
	}
}

type userStacksJSON struct {
	UserStacks struct {
		Total      uint64            `json:"stacks_total"`
		Complete   uint64            `json:"stacks_complete"`
		NoUnwind   uint64            `json:"truncated_no_unwind_info"`
		FPFallback uint64            `json:"frame_pointer_fallback"`
		Files      map[string]uint64 `json:"no_unwind_info_files"`
	} `json:"user_stacks"`
}

// TestProfileFallsBackToFramePointers: code without unwind info is walked
// by frame pointers and counted; without frame pointers either, the
// truncated stacks name the file.
func TestProfileFallsBackToFramePointers(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	noTables := []string{"-O2", "-g0", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"}
	fp := testutil.BuildC(t, dir, "unwind-fp-only", []string{"unwind.c"}, append(noTables, "-fno-omit-frame-pointer")...)
	none := testutil.BuildC(t, dir, "unwind-nothing", []string{"unwind.c"}, append(noTables, "-fomit-frame-pointer")...)
	run := func(bin string) (userStacksJSON, map[string]uint64) {
		w := testutil.Start(t, bin, "60")
		p := strconv.Itoa(w.Process.Pid)
		r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", p, "-d", "1s", "--user", "--json")
		var j userStacksJSON
		r.JSON(t, &j)
		f := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", p, "-d", "1s", "--user", "--folded")
		return j, folded(t, f.Stdout)
	}

	j, st := run(fp)
	hit, total := reaching(st, "main")
	t.Logf("frame pointers, no tables: %+v; %d of %d samples reach main", j.UserStacks, hit, total)
	if u := j.UserStacks; u.Total == 0 || float64(u.FPFallback) < 0.95*float64(u.Total) || float64(u.Complete) < 0.95*float64(u.Total) {
		t.Errorf("want ≥ 95%% of stacks complete and counted as frame-pointer fallback: %+v", u)
	}
	if float64(hit) < 0.95*float64(total) {
		t.Errorf("%d of %d samples reach main by frame pointers", hit, total)
	}

	j, _ = run(none)
	t.Logf("neither: %+v", j.UserStacks)
	if u := j.UserStacks; u.Total == 0 || float64(u.Files[none]) < 0.9*float64(u.Total) {
		t.Errorf("want ≥ 90%% of stacks truncated with no unwind info for %s: %+v", none, u)
	}
}

// TestProfileFollowsDlopen: a library mapped after profiling started gets
// its table on the walker's first notice, so its stacks unwind fully.
func TestProfileFollowsDlopen(t *testing.T) {
	dir, lib := testutil.Workload(t, "libunwindlate.so", []string{"unwind_dlopen.c"}, "-DLIB", "-shared", "-fPIC", "-O2", "-fomit-frame-pointer")
	bin := testutil.BuildC(t, dir, "unwind_dlopen", []string{"unwind_dlopen.c"}, "-O2", "-fomit-frame-pointer", "-ldl")
	w := testutil.Start(t, bin, lib, "0.5", "5")
	r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", strconv.Itoa(w.Process.Pid), "-d", "2500ms", "--user", "--folded")
	inLib := func(s string) bool { return strings.HasSuffix(s, ";lib_inner") || strings.HasSuffix(s, ";lib_outer") }
	wantThrough(t, r.Stdout, "samples in the late library", inLib, ";main;lib_outer", 300)
}

// wantThrough checks that of the folded stacks in out that in selects
// (at least min samples), 95% or more pass through the frames through.
func wantThrough(t *testing.T, out, what string, in func(string) bool, through string, min uint64) {
	t.Helper()
	var hit, total uint64
	for s, n := range folded(t, out) {
		if in(s) {
			total += n
			if strings.Contains(s, through) {
				hit += n
			}
		}
	}
	t.Logf("%d of %d %s pass through %s", hit, total, what, through)
	if total < min || float64(hit) < 0.95*float64(total) {
		t.Errorf("%d of %d %s pass through %s, want ≥ 95%% of at least %d:\n%s", hit, total, what, through, min, out)
	}
}

// TestProfileUnwindsVDSO: time spent in clock_gettime is in the vDSO,
// which exists only in memory; its table is built from the process's copy,
// so no stack needs frame pointers there.
func TestProfileUnwindsVDSO(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	w := testutil.Start(t, bin, "60", "clock")
	r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", strconv.Itoa(w.Process.Pid), "-d", "1500ms", "--user", "--json")
	var j userStacksJSON
	r.JSON(t, &j)
	u := j.UserStacks
	t.Logf("%+v", u)
	if u.Total < 300 || float64(u.Complete) < 0.99*float64(u.Total) || float64(u.FPFallback) > 0.01*float64(u.Total) {
		t.Errorf("want ≥ 99%% complete and ≤ 1%% through frame pointers: %+v", u)
	}
}

// TestProfileFrameLimit: stacks deeper than the walker's 128 frames are
// cut there and counted; shallower ones are whole.
func TestProfileFrameLimit(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	for _, c := range []struct {
		depth   string
		limited bool
	}{{"100", false}, {"200", true}} {
		w := testutil.Start(t, bin, "60", "deep", c.depth)
		r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", strconv.Itoa(w.Process.Pid), "-d", "1s", "--user", "--json")
		var j struct {
			U struct {
				Total      uint64 `json:"stacks_total"`
				Complete   uint64 `json:"stacks_complete"`
				FrameLimit uint64 `json:"truncated_frame_limit"`
			} `json:"user_stacks"`
		}
		r.JSON(t, &j)
		t.Logf("depth %s: %+v", c.depth, j.U)
		got := j.U.FrameLimit
		if !c.limited {
			got = j.U.Complete
		}
		if j.U.Total < 100 || float64(got) < 0.95*float64(j.U.Total) {
			t.Errorf("depth %s: want ≥ 95%% of stacks %s: %+v", c.depth, map[bool]string{true: "at the frame limit", false: "complete"}[c.limited], j.U)
		}
		w.Process.Kill()
	}
}

// TestProfileUnwindsThroughSignalFrames: samples in a signal handler
// unwind through the signal frame into the interrupted code and on to main.
func TestProfileUnwindsThroughSignalFrames(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind_signal", []string{"unwind_signal.c"}, "-O2", "-fomit-frame-pointer")
	w := testutil.Start(t, bin, "60")
	r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", strconv.Itoa(w.Process.Pid), "-d", "1500ms", "--user", "--folded")
	inHandler := func(s string) bool { return strings.Contains(s, ";on_signal;handler_work") }
	wantThrough(t, r.Stdout, "samples in the signal handler", inHandler, ";main;outer_loop;", 100)
}

// TestProfileShortLivedChildren: system-wide, the short-lived children of
// a shell script get their tables at exec and, after they exit, their
// stacks are still named from the mappings the unwinder kept.
func TestProfileShortLivedChildren(t *testing.T) {
	dir, bin := testutil.Workload(t, "unwind-kid", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
	p := testutil.StartSonde(t, dir, "profile", "-F", "499", "-d", "4s", "--user", "--folded")
	// The children start once the sampler is attached on every CPU.
	testutil.WaitBPFLinks(t, p.Cmd.Process.Pid, runtime.NumCPU(), 30*time.Second)
	testutil.Tool(t, "/bin/sh", "-c", "for i in 1 2 3 4 5 6; do "+bin+" 0.3; done") // the children
	if err := p.Wait(); err != nil {
		t.Fatalf("sonde profile: %v\n%s", err, p.Stderr.String())
	}
	var kid, chain uint64
	for s, n := range folded(t, p.Stdout.String()) {
		if !strings.HasPrefix(s, "unwind-kid;") {
			continue
		}
		kid += n
		if strings.Contains(s, ";main;dispatch;") {
			chain += n
		}
	}
	t.Logf("%d of %d samples of the short-lived children reach main;dispatch", chain, kid)
	if float64(chain) < 0.9*float64(kid) {
		for s, n := range folded(t, p.Stdout.String()) {
			if strings.HasPrefix(s, "unwind-kid;") && !strings.Contains(s, ";main;dispatch;") && n > 2 {
				t.Logf("  %d %s", n, s)
			}
		}
	}
	if kid < 200 || float64(chain) < 0.9*float64(kid) {
		t.Errorf("%d of %d samples of short-lived children unwind and symbolize to main;dispatch, want ≥ 90%%", chain, kid)
	}
}

// record -g goes through the same walker (--call-graph auto).

// recordFolded records args (after "record -o DIR/NAME.data") and returns the
// folded stacks and record's stderr.
func recordFolded(t *testing.T, dir, name string, args ...string) (map[string]uint64, string) {
	t.Helper()
	data := filepath.Join(dir, name+".data")
	r := testutil.MustRun(t, dir, append([]string{"record", "-o", data}, args...)...)
	return folded(t, foldedOf(t, dir, data)), r.Stderr
}

// TestRecordUnwindsWithoutFramePointers: record -g (auto) on main →
// dispatch → {heavy, light}, 3:1, built without frame pointers and with
// them: heavy/light within 3 points of 75/25 under the full chain, ≥ 95%
// of samples reaching main. The kernel's frame-pointer walk of the no-fp
// build is printed beside it.
func TestRecordUnwindsWithoutFramePointers(t *testing.T) {
	dir, builds := unwindBuilds(t, "no-fp", "fp")
	for _, name := range []string{"no-fp", "fp"} {
		t.Run(name, func(t *testing.T) {
			st, stderr := recordFolded(t, dir, name, "-g", "-F", "999", "--", builds[name], "3")
			if !strings.Contains(stderr, "call graph: auto") || !regexp.MustCompile(`user stacks complete: \d`).MatchString(stderr) {
				t.Errorf("record -g does not say which call graph ran and how complete it is:\n%s", stderr)
			}
			checkDispatchSplit(t, "record -g "+name+" (3 s at 999 Hz)", st, 900, stderr)
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
	dir, bin := testutil.Workload(t, "unwind-nofp", []string{"unwind.c"}, "-O2", "-fomit-frame-pointer")
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
	dir, bin := testutil.Workload(t, "unwind-fp", []string{"unwind.c"}, "-O2", "-fno-omit-frame-pointer")
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

// TestCompletenessBesideFolded: folded output is data, so how complete its
// stacks are goes to stderr, the same line the text report ends with; the
// wakeup tool says it of the wakers' stacks too (text and JSON).
func TestCompletenessBesideFolded(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	w := startWork(t, dir, "100000")
	r := testutil.MustRun(t, dir, "profile", "-F", "499", "-p", strconv.Itoa(w.Process.Pid), "-d", "1s", "--folded")
	if !regexp.MustCompile(`(?m)^# user stacks complete: [0-9.]+%`).MatchString(r.Stderr) {
		t.Errorf("profile --folded: no completeness line on stderr:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stdout, "#") {
		t.Errorf("profile --folded: a comment line in the folded data:\n%s", r.Stdout)
	}
	folded(t, r.Stdout)

	r = testutil.MustRun(t, dir, "wakeup", "-d", "1s", "--folded")
	for _, want := range []string{"# blocked user stacks complete:", "# waker user stacks complete:"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("wakeup --folded: stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	r = testutil.MustRun(t, dir, "wakeup", "-d", "1s", "--json")
	var doc struct {
		Waker *struct {
			Total uint64 `json:"stacks_total"`
		} `json:"waker_user_stacks"`
	}
	r.JSON(t, &doc)
	if doc.Waker == nil || doc.Waker.Total == 0 {
		t.Errorf("wakeup --json: no waker_user_stacks, or nothing counted:\n%.500s", r.Stdout)
	}
}
