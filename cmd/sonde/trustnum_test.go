package main

// Numbers that must match their ground truth: stat -p with a command
// alongside against the kernel's schedstat, funclat's duration against a
// workload's known call rate, biosnoop's queue times against bpftrace, and
// symbols of binaries that are gone from disk or gone from the system.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// schedstatSum parses the output of `cat /proc/PID/task/*/schedstat` and
// returns the process's time on CPU in ns (the first field, summed over
// its threads).
func schedstatSum(t *testing.T, s string) float64 {
	t.Helper()
	total := 0.0
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("schedstat line %q", l)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		total += v
	}
	return total
}

// TestStatPidWithCommand: `stat -p PID CMD` counts PID while CMD runs, not
// CMD (perf's rule). The command itself reads the target's schedstat when
// it starts and before it ends, so the kernel's own figure covers the same
// window; task-clock must agree with it.
func TestStatPidWithCommand(t *testing.T) {
	dir, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})
	w := exec.Command(bin, "alt") // about half a CPU
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	pid := strconv.Itoa(w.Process.Pid)
	script := fmt.Sprintf("cat /proc/%[1]s/task/*/schedstat > before; sleep 1; cat /proc/%[1]s/task/*/schedstat > after", pid)
	// stat's counts go to stderr as perf's do, or to -o FILE.
	testutil.MustRun(t, dir, "stat", "-e", "task-clock", "--json", "-o", "stat.json", "-p", pid, "--", "sh", "-c", script)
	s := readStat(t, dir, "stat.json")
	got := statValue(t, s, "task-clock") // ns
	read := func(name string) float64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return schedstatSum(t, string(b))
	}
	want := read("after") - read("before")
	t.Logf("task-clock of pid %s: %.1f ms; schedstat over the command: %.1f ms", pid, got/1e6, want/1e6)
	if want < 200e6 {
		t.Fatalf("the workload ran only %.1f ms in 1 s", want/1e6)
	}
	// The counters open before the command starts and close after it
	// ends (a few ms more); perf's task-clock also misses the scheduler's
	// own time at each of the workload's ~500 switches a second, which
	// schedstat counts (perf stat -p reads 1–2% less here too).
	if got < want*0.95 || got > want*1.01+20e6 {
		t.Errorf("task-clock %.1f ms, schedstat %.1f ms over the same window", got/1e6, want/1e6)
	}
}

// TestFunclatDuration: -d counts from when the probes are attached, so a
// function called every 10 ms is seen 100 times a second of -d, however
// long attaching took; and the run ends soon after.
func TestFunclatDuration(t *testing.T) {
	dir, bin := testutil.Workload(t, "ticker", []string{"ticker.c"})
	w := testutil.Start(t, bin)
	begin := time.Now()
	r := testutil.MustRun(t, dir, "funclat", "--json", "-d", "2s", "-p", strconv.Itoa(w.Process.Pid), bin+":tick")
	wall := time.Since(begin)
	rep := funclatReport(t, r, 1)
	n := rep.Functions[0].Stats.Count
	t.Logf("funclat -d 2s: %d calls of tick, duration %v, %v wall", n, time.Duration(rep.DurationNS), wall)
	if n < 197 || n > 203 {
		t.Errorf("%d calls of a function called every 10 ms in 2 s: want 200 ± 3", n)
	}
	if d := time.Duration(rep.DurationNS); d < 1990*time.Millisecond || d > 2100*time.Millisecond {
		t.Errorf("reported duration %v for -d 2s", d)
	}
	if wall > 3500*time.Millisecond {
		t.Errorf("funclat -d 2s took %v", wall)
	}
}

// TestBiosnoopQueueTimes: every direct-I/O write dd makes is queued
// (block_rq_insert, then block_rq_issue) and biosnoop shows each with its
// queued time, which agrees with bpftrace timing the same requests; and
// the lines are there while biosnoop still runs (streamed, not at the end).
func TestBiosnoopQueueTimes(t *testing.T) {
	testutil.RequirePrivileged(t)
	bt := testutil.RequireTool(t, "bpftrace", "bpftrace")
	dir := t.TempDir()
	// bpftrace times insert → issue of dd's requests, keyed as the kernel
	// pairs them (dev, sector). It only updates maps on the way (printing
	// there would delay the programs after it, biosnoop's, by µs) and
	// prints them when it ends.
	script := `tracepoint:block:block_rq_insert /comm == "dd"/ { @ins[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_issue /@ins[args->dev, args->sector]/ {
	@q[args->sector] = nsecs - @ins[args->dev, args->sector];
	delete(@ins[args->dev, args->sector]);
}
END { clear(@ins); }`
	var btOut, btErr testutil.SyncBuffer
	b := exec.Command(bt, "-e", script)
	b.Stdout, b.Stderr = &btOut, &btErr
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { b.Process.Kill(); b.Wait() }()
	snoopOut, err := os.Create(filepath.Join(dir, "snoop.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := exec.Command(testutil.Sonde(t), "biosnoop", "--json")
	s.Stdout = snoopOut
	ready := testutil.NotifyReady(t, s)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Process.Kill(); s.Wait() }()
	// bpftrace's ready signal; its start-up (LLVM, BTF) can take many
	// seconds on a cold, loaded machine.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(btOut.String(), "Attaching"); {
		if time.Now().After(deadline) {
			t.Fatalf("bpftrace did not attach within 60 s: %s\n%s", btOut.String(), btErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ready.Wait(t)
	directIO(t, dir, 100)

	type ioLine struct {
		Comm     string  `json:"comm"`
		RWBS     string  `json:"rwbs"`
		Sector   uint64  `json:"sector"`
		QueuedNS *uint64 `json:"queued_ns"`
	}
	read := func() []ioLine {
		raw, err := os.ReadFile(snoopOut.Name())
		if err != nil {
			t.Fatal(err)
		}
		var out []ioLine
		// Whole lines only: the last may be half written while it runs.
		for _, l := range strings.Split(string(raw[:bytes.LastIndexByte(raw, '\n')+1]), "\n") {
			var x ioLine
			if l == "" {
				continue
			}
			if err := json.Unmarshal([]byte(l), &x); err != nil {
				t.Fatalf("biosnoop line %q: %v", l, err)
			}
			out = append(out, x)
		}
		return out
	}
	ddWrites := func(ls []ioLine) int {
		n := 0
		for _, x := range ls {
			if x.Comm == "dd" && strings.Contains(x.RWBS, "W") {
				n++
			}
		}
		return n
	}
	// Lines stream: dd's writes are printed while biosnoop still runs.
	streamed := read()
	for deadline := time.Now().Add(10 * time.Second); ddWrites(streamed) < 100 && time.Now().Before(deadline); streamed = read() {
		time.Sleep(20 * time.Millisecond)
	}
	s.Process.Signal(os.Interrupt)
	if err := s.Wait(); err != nil {
		t.Fatalf("biosnoop: %v", err)
	}
	b.Process.Signal(os.Interrupt)
	b.Wait()
	ios := read()
	if writes := ddWrites(streamed); writes < 100 {
		t.Errorf("%d of dd's 100 writes printed while biosnoop ran: lines must stream", writes)
	}

	want := map[uint64]float64{} // sector → queued ns, by bpftrace
	for _, m := range regexp.MustCompile(`@q\[(\d+)\]: (\d+)`).FindAllStringSubmatch(btOut.String(), -1) {
		sec, _ := strconv.ParseUint(m[1], 10, 64)
		q, _ := strconv.ParseFloat(m[2], 64)
		want[sec] = q
	}
	if len(want) < 100 {
		t.Fatalf("bpftrace timed %d of dd's requests, want ≥ 100:\n%s", len(want), btOut.String())
	}
	matched, close := 0, 0
	for _, x := range ios {
		q, ok := want[x.Sector]
		if !ok || x.Comm != "dd" {
			continue
		}
		matched++
		if x.QueuedNS == nil {
			t.Errorf("sector %d (%s): bpftrace timed it queued %.1f µs, biosnoop shows no queued time", x.Sector, x.RWBS, q/1e3)
			continue
		}
		// Both read the clock on the same two tracepoints, a few µs apart.
		if d := float64(*x.QueuedNS) - q; d < 5e3+0.1*q && d > -5e3-0.1*q {
			close++
		} else {
			t.Logf("sector %d: biosnoop %.1f µs, bpftrace %.1f µs", x.Sector, float64(*x.QueuedNS)/1e3, q/1e3)
		}
	}
	t.Logf("%d requests timed by bpftrace; biosnoop printed %d of them, %d within 5 µs + 10%%", len(want), matched, close)
	if matched < len(want)*99/100 {
		t.Errorf("biosnoop printed %d of the %d requests bpftrace saw", matched, len(want))
	}
	if close < matched*95/100 {
		t.Errorf("only %d of %d queued times agree with bpftrace", close, matched)
	}
}

// TestDeletedDirectory: binaries whose directory was deleted while they
// run are still named (through /proc/PID/map_files and /proc/PID/exe), by
// record and profile, and probe -p still probes them.
func TestDeletedDirectory(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	gone := mkdir(t, dir, "gone")
	work := testutil.BuildC(t, gone, "split", []string{"work.c"})
	ticker := testutil.BuildC(t, gone, "ticker", []string{"ticker.c"})
	start := func(args ...string) *exec.Cmd { return testutil.Start(t, args[0], args[1:]...) }
	w, tk := start(work, "100000"), start(ticker)
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	wp, tp := strconv.Itoa(w.Process.Pid), strconv.Itoa(tk.Process.Pid)

	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "999", "-p", wp, "--duration", "1s", "-o", "d.data")
	checkSplit(t, reportJSON(t, dir, "-i", "d.data", "--no-children"), "spin_a", "spin_b")
	r := testutil.MustRun(t, dir, "profile", "-F", "999", "-p", wp, "-d", "1s", "--json")
	var rep jsonReport
	r.JSON(t, &rep)
	checkSplit(t, rep, "spin_a", "spin_b")

	testutil.MustRun(t, dir, "probe", "-p", tp, "-a", "tick")
	t.Cleanup(func() { testutil.Run(t, dir, "probe", "-d", "probe_ticker:tick") })
	testutil.MustRun(t, dir, "stat", "--json", "-o", "tick.json", "-e", "probe_ticker:tick", "-p", tp, "--", "sleep", "1")
	s := readStat(t, dir, "tick.json")
	// tick runs every 10 ms: 100 calls in the second sleep runs.
	if n := statValue(t, s, "probe_ticker:tick"); n < 95 || n > 105 {
		t.Errorf("probe on the deleted binary counted %.0f calls in 1 s, want 100 ± 5", n)
	}
}

// TestSrclineKernelRows: without line info, --sort srcline names a kernel
// row by its function and offset (as perf does), never as
// [kernel.kallsyms]+0xaddress.
func TestSrclineKernelRows(t *testing.T) {
	dir, _ := testutil.Workload(t, "syscalls", []string{"syscalls.c"})
	testutil.MustRun(t, dir, "record", "-q", "-o", "sys.data", "--", "./syscalls", "1000000")
	rep := reportJSON(t, dir, "-i", "sys.data", "--sort", "srcline", "--comm", "syscalls")
	kernel := 0
	named := regexp.MustCompile(`^[A-Za-z_][\w.]*\+0x[0-9a-f]+$`)
	for _, e := range rep.Entries {
		if !e.Kernel {
			continue
		}
		kernel++
		if s := e.Keys["srcline"]; !named.MatchString(s) {
			t.Errorf("kernel srcline row %q, want function+0xoffset", s)
		}
	}
	if kernel == 0 {
		t.Fatalf("no kernel rows in a write(2) loop: %+v", rep.Entries)
	}
}

// TestProfileShortLived: profile -p of a process that exits long before
// the end still names its frames: its mappings were kept while it ran.
// The workload's life is set in time, not in rounds: it spins until told
// the profile is attached (its ready signal: a BPF link per CPU), then 1 s
// more by its own clock, and exits in the middle of the profile.
func TestProfileShortLived(t *testing.T) {
	dir, bin := testutil.Workload(t, "work", []string{"work.c"})
	w := exec.Command(bin, "wait", "1")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { w.Wait(); close(exited) }()
	defer func() { w.Process.Kill(); <-exited }()
	p := testutil.StartSonde(t, dir, "profile", "-F", "999", "-p", strconv.Itoa(w.Process.Pid), "-d", "5s", "--json", "-o", "short.data")
	testutil.WaitBPFLinks(t, p.Cmd.Process.Pid, runtime.NumCPU(), 30*time.Second)
	w.Process.Signal(syscall.SIGUSR1)
	select {
	case <-exited:
	case <-p.Done():
		t.Fatalf("the profile ended (%v) before the workload exited:\n%s", p.Wait(), p.Stderr.String())
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("sonde profile: %v\n%s", err, p.Stderr.String())
	}
	if w.ProcessState.ExitCode() != 0 {
		t.Fatalf("the workload exited with %v, want 0 (it ended on its own)", w.ProcessState)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(p.Stdout.String()), &rep); err != nil {
		t.Fatalf("decoding profile --json: %v\n%.2000s", err, p.Stdout.String())
	}
	for _, e := range rep.Entries {
		if s := e.Keys["sym"]; strings.HasPrefix(s, "[unknown]") {
			t.Errorf("frame %q of the exited process", s)
		}
	}
	checkSplit(t, rep, "spin_a", "spin_b")
}

// TestPythonFramesHaveObjects: python3 is built without frame pointers, so
// a -g recording walks through saved values that are not code addresses.
// Frames in data are named by their mapping ([heap]+0x…, [anon:PID]+0x…)
// and the walk ends where it leaves the process's memory: almost no
// [unknown]+0xaddress frames are left in the folded output.
func TestPythonFramesHaveObjects(t *testing.T) {
	testutil.RequirePrivileged(t)
	py := testutil.RequireTool(t, "python3", "python3")
	dir := t.TempDir()
	testutil.MustRun(t, dir, "record", "-q", "-g", "-F", "999", "-o", "py.data", "--", py, "-c",
		"import json\nx = 0\nfor i in range(300000): x += len(json.dumps({'a': i}))")
	folded := testutil.MustRun(t, dir, "flamegraph", "-i", "py.data", "--format", "folded").Stdout
	total, unknown := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		n, err := strconv.Atoi(l[i+1:])
		if err != nil {
			t.Fatalf("folded line %q", l)
		}
		total += n
		if strings.Contains(l[:i], "[unknown]") {
			unknown += n
		}
	}
	t.Logf("%d of %d samples have an [unknown] frame", unknown, total)
	if total < 200 || unknown*50 > total {
		t.Errorf("%d of %d samples have [unknown] frames, want under 2%%:\n%s", unknown, total, folded)
	}
}
