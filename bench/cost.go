package main

// The cost table (issue 12): every BPF tool beside its peer on a workload
// that stresses its events, measured by the kernel itself. With
// kernel.bpf_stats_enabled=1 the kernel times every run of every BPF
// program; the bench reads the run count and run time of the programs the
// tool process holds (found through /proc/PID/fdinfo, so BPF programs of
// other processes on the machine never count) before and after the
// workload. Wall-clock slowdowns on this 2-vCPU VM swing by ±20%, which
// would hide the differences measured here.

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	costReps = flag.Int("cost-reps", 3, "interleaved repetitions per tool in the cost table")
	costOnly = flag.String("cost-tools", "", "comma-separated tools of the cost table to run (default all)")
)

// costCase is one row: a sonde command, its peer and the workload whose
// events both trace.
type costCase struct {
	tool     string
	sonde    []string // arguments after the sonde binary
	peerName string
	peer     []string // nil: no peer (the row states an absolute goal)
	// work runs the workload once and returns how many of the traced
	// events it made and their name.
	work func() (uint64, string)
}

// toolCost is what one tool run cost.
type toolCost struct {
	runs    uint64        // BPF program runs during the workload
	bpf     time.Duration // BPF run time during the workload
	cpu     time.Duration // the tool process's own CPU time during the workload
	events  uint64        // the workload's events
	evName  string
	failure string
}

func costTable(dir, spin string) {
	old, _ := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	if err := os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0); err != nil {
		fail("cost: cannot enable kernel.bpf_stats_enabled: " + err.Error())
	}
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", old, 0)

	cases := selectCostCases(costCases(dir, spin))
	fmt.Printf("6. BPF cost per event, measured by the kernel (bpf_stats: run count and run time of each tool's\n")
	fmt.Printf("   own programs during the workload; tool CPU = the tool process's CPU time (schedstat) over the same span;\n")
	fmt.Printf("   %d interleaved repetitions, medians)\n\n", *costReps)
	fmt.Printf("   %-12s %-17s %10s %9s %10s %9s %10s | %-16s %10s %9s %10s %9s %10s | %6s %6s\n",
		"tool", "events", "BPF ms", "ns/run", "runs", "ns/event", "tool CPU", "peer", "BPF ms", "ns/run", "runs", "ns/event", "tool CPU", "BPF", "+CPU")
	for _, c := range cases {
		sonde, peer := measureCase(c)
		printCostRow(c, sonde, peer)
	}
}

// costWorkloads are the workloads of the cost table (see costCase.work).
type costWorkloads struct {
	switches, calls, syscalls, io, spin func() (uint64, string)
}

// newCostWorkloads builds the workload programs with build; calls is the
// program whose function funclat traces.
func newCostWorkloads(dir, spin string, build func(string) string) (w costWorkloads, calls string) {
	pingpong := build("pingpong")
	calls = build("calls")
	syscallsBin := build("syscalls")
	ioFile := filepath.Join(dir, "io.bin")

	// Context switches are counted system-wide (/proc/stat): both tools
	// trace every switch of the machine.
	w.switches = func() (uint64, string) {
		c0 := ctxt()
		mustRun(pingpong, "2", "2")
		return ctxt() - c0, "context switches"
	}
	nCalls := 300000
	w.calls = func() (uint64, string) {
		mustRun(calls, strconv.Itoa(nCalls))
		return uint64(nCalls), "calls"
	}
	nSys := 1000000
	w.syscalls = func() (uint64, string) {
		mustRun(syscallsBin, strconv.Itoa(nSys))
		return uint64(nSys), "write syscalls"
	}
	nIO := 2000
	w.io = func() (uint64, string) {
		mustRun("dd", "if=/dev/zero", "of="+ioFile, "bs=4k", "count="+strconv.Itoa(nIO), "oflag=direct", "status=none")
		return uint64(nIO), "block I/Os"
	}
	w.spin = func() (uint64, string) {
		start := time.Now()
		mustRun(spin, "4000000")
		// 999 Hz on every CPU: the samples the profile programs took.
		return uint64(time.Since(start).Seconds() * 999 * float64(runtime.NumCPU())), "samples (999 Hz)"
	}
	return w, calls
}

// costCases lists every row of the cost table, building its programs.
func costCases(dir, spin string) []costCase {
	build := func(name string) string {
		return gcc(dir, name, "testdata/"+name+".c", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread")
	}
	w, calls := newCostWorkloads(dir, spin, build)
	cases := []costCase{
		{tool: "offcpu", sonde: []string{"offcpu"}, peerName: "offcputime", peer: []string{"offcputime"}, work: w.switches},
		// wakeuptime keeps the waker's kernel stack only; sonde wakeup -K
		// keeps the blocked task's kernel stack as well (offwaketime's
		// chain). The default (user stacks walked too) has no peer here.
		{tool: "wakeup -K", sonde: []string{"wakeup", "-K"}, peerName: "wakeuptime", peer: []string{"wakeuptime"}, work: w.switches},
		// The same work on both sides: kernel stacks only (no user walk).
		// (offcputime has no kernel-stacks-only mode: its -k means kernel
		// threads only.)
		{tool: "offcpu -K", sonde: []string{"offcpu", "-K"}, peerName: "bpftrace offcpu -K", peer: []string{"bpftrace", "-e", offcputimeKernelBT}, work: w.switches},
		{tool: "wakeup -K", sonde: []string{"wakeup", "-K"}, peerName: "bpftrace offwk -K", peer: []string{"bpftrace", "-e", offwaketimeKernelBT}, work: w.switches},
		// libbpf-tools has no offwaketime (what sonde wakeup shows: the
		// blocked and the waker's user and kernel stacks): bpftrace does
		// the same work (frame-pointer user stacks).
		{tool: "wakeup", sonde: []string{"wakeup"}, peerName: "bpftrace offwake", peer: []string{"bpftrace", "-e", offwaketimeBT}, work: w.switches},
		{tool: "runqlat", sonde: []string{"runqlat"}, peerName: "runqlat", peer: []string{"runqlat"}, work: w.switches},
		{tool: "syscount", sonde: []string{"syscount"}, peerName: "syscount", peer: []string{"syscount"}, work: w.syscalls},
		{tool: "syscount -L", sonde: []string{"syscount", "-L"}, peerName: "syscount -L", peer: []string{"syscount", "-L"}, work: w.syscalls},
		{tool: "biolat", sonde: []string{"biolat"}, peerName: "biolatency", peer: []string{"biolatency"}, work: w.io},
		{tool: "biolat -Q", sonde: []string{"biolat", "-Q"}, peerName: "biolatency -Q", peer: []string{"biolatency", "-Q"}, work: w.io},
		// libbpf-tools' biosnoop (and biosnoop.bt) need kprobes, which this
		// kernel lacks: bpftrace does the same per-I/O work on the block
		// tracepoints instead (issue, complete, one line printed per I/O).
		{tool: "biosnoop", sonde: []string{"biosnoop"}, peerName: "bpftrace biosnoop", peer: []string{"bpftrace", "-e",
			"tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; @who[args->dev, args->sector] = (pid, comm); }\n" +
				"tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ { $w = @who[args->dev, args->sector]; " +
				"printf(\"%d %s %d %d %d\\n\", $w.0, $w.1, args->sector, args->nr_sector, (nsecs - @start[args->dev, args->sector]) / 1000); " +
				"delete(@start[args->dev, args->sector]); delete(@who[args->dev, args->sector]); }"}, work: w.io},
		{tool: "funclat", sonde: []string{"funclat", calls + ":compute"}, peerName: "funclatency", peer: []string{"funclatency", calls + ":compute"}, work: w.calls},
		{tool: "profile", sonde: []string{"profile", "-F", "999"}, peerName: "bpftrace profile",
			peer: []string{"bpftrace", "-e", "profile:hz:999 { @[kstack, ustack, pid] = count(); }"}, work: w.spin},
		// The same work on both sides: kernel stacks only (sonde's user
		// stacks are walked through .eh_frame tables, bpftrace's follow
		// frame pointers and lose the frames of code built without them).
		{tool: "profile -K", sonde: []string{"profile", "-F", "999", "-K"}, peerName: "bpftrace profile -K",
			peer: []string{"bpftrace", "-e", "profile:hz:999 { @[kstack, pid] = count(); }"}, work: w.spin},
		{tool: "cputime", sonde: []string{"cputime", "-i", "1h"}, peerName: "empty program", peer: floorCommand(), work: w.switches},
		// why runs what offcpu, wakeup and runqlat do at once (and follows
		// wakers): no one peer does all of it; compare with their rows.
		{tool: "why", sonde: []string{"why"}, work: w.switches},
		{tool: "why -K", sonde: []string{"why", "-K"}, work: w.switches},
		lockCostCase(build),
	}
	cases = append(cases, fileCostCases(dir, build)...)
	return append(cases, bccCostCases(dir, w)...)
}

// selectCostCases keeps the rows -cost-tools names, all without it.
func selectCostCases(cases []costCase) []costCase {
	if *costOnly == "" {
		return cases
	}
	keep := map[string]bool{}
	for _, t := range strings.Split(*costOnly, ",") {
		keep[strings.TrimSpace(t)] = true
	}
	var sel []costCase
	for _, c := range cases {
		if keep[c.tool] {
			sel = append(sel, c)
		}
	}
	return sel
}

// measureCase runs the sonde tool and its peer -cost-reps times each,
// interleaved and alternating which goes first, so that the machine's
// drift falls on both alike.
func measureCase(c costCase) (sonde, peer []toolCost) {
	for r := 0; r < *costReps; r++ {
		order := []bool{true, false}
		if r%2 == 1 {
			order = []bool{false, true}
		}
		for _, isSonde := range order {
			if isSonde {
				sonde = append(sonde, measureTool(append([]string{*sondeBin}, c.sonde...), c.work))
			} else if c.peer != nil {
				peer = append(peer, measureTool(c.peer, c.work))
			}
		}
		fmt.Fprintf(os.Stderr, "\rcost %s: repetition %d/%d   ", c.tool, r+1, *costReps)
	}
	fmt.Fprintln(os.Stderr)
	return sonde, peer
}

// printCostRow prints a row's medians beside its peer's, then the notes of
// failed runs.
func printCostRow(c costCase, sonde, peer []toolCost) {
	s := medianCost(sonde)
	line := fmt.Sprintf("   %-12s %-17s %s", c.tool, trunc(s.evName, 17), s.row())
	if c.peer != nil {
		p := medianCost(peer)
		line += fmt.Sprintf(" | %-16s %s | %6s %6s", c.peerName, p.row(), ratio(s.perEvent(s.bpf), p.perEvent(p.bpf)), ratio(s.perEvent(s.bpf+s.cpu), p.perEvent(p.bpf+p.cpu)))
	} else {
		line += fmt.Sprintf(" | %-16s", "(no peer)")
	}
	fmt.Println(line)
	for _, t := range append(sonde, peer...) {
		if t.failure != "" {
			fmt.Printf("     note: %s\n", t.failure)
		}
	}
	if c.tool == "cputime" && s.events > 0 {
		perSwitch := float64(s.bpf.Nanoseconds()) / float64(s.events)
		secs := 1.0 // one second of the seed's rate
		pct := 100 * perSwitch * 60798 * secs / 1e9
		fmt.Printf("     cputime: %.0f ns of BPF per context switch (goal ≤ 150); at seed 002's 60,798 switches/s that is %.2f%% of one CPU (goal < 1%%)\n", perSwitch, pct)
		if p := medianCost(peer); p.runs > 0 {
			fmt.Printf("     the empty sched_switch program's floor in the same run: %.0f ns a run (the kernel's dispatch and bpf_stats' own clock reads)\n", float64(p.bpf.Nanoseconds())/float64(p.runs))
		}
	}
}

// offwaketimeBT is bcc's offwaketime in bpftrace: the blocked task's
// stacks at switch-out, the waker's at sched_waking, summed per pair when
// the blocked task runs again.
const offwaketimeBT = `tracepoint:sched:sched_switch {
	@start[args->prev_pid] = nsecs; @bk[args->prev_pid] = kstack; @bu[args->prev_pid] = ustack; @bc[args->prev_pid] = comm;
	$s = @start[args->next_pid];
	if ($s) {
		$n = args->next_pid;
		@blocked[@wk[$n], @wu[$n], @wc[$n], @bk[$n], @bu[$n], @bc[$n]] = sum(nsecs - $s);
		delete(@start[$n]); delete(@wk[$n]); delete(@wu[$n]); delete(@wc[$n]);
	}
}
tracepoint:sched:sched_waking /@start[args->pid]/ { @wk[args->pid] = kstack; @wu[args->pid] = ustack; @wc[args->pid] = comm; }`

// offcputimeKernelBT is offcputime's work with kernel stacks only (what
// offcpu -K keeps): the blocked task's kernel stack and name at its
// switch-out, its blocked time added at its switch-in.
const offcputimeKernelBT = `tracepoint:sched:sched_switch {
	@start[args->prev_pid] = nsecs; @bk[args->prev_pid] = kstack; @bc[args->prev_pid] = comm;
	$s = @start[args->next_pid];
	if ($s) {
		$n = args->next_pid;
		@off[@bk[$n], @bc[$n], $n] = sum(nsecs - $s);
		delete(@start[$n]);
	}
}`

// offwaketimeKernelBT is offwaketimeBT with kernel stacks only.
var offwaketimeKernelBT = strings.NewReplacer("@bu[args->prev_pid] = ustack; ", "", "@wu[$n], ", "", "@bu[$n], ", "",
	" delete(@wu[$n]);", "", "@wu[args->pid] = ustack; ", "").Replace(offwaketimeBT)

func (t toolCost) row() string {
	if t.failure != "" && t.runs == 0 {
		return fmt.Sprintf("%10s %9s %10s %9s %10s", "failed", "-", "-", "-", "-")
	}
	perRun, perEv := 0.0, 0.0
	if t.runs > 0 {
		perRun = float64(t.bpf.Nanoseconds()) / float64(t.runs)
	}
	if t.events > 0 {
		perEv = float64(t.bpf.Nanoseconds()) / float64(t.events)
	}
	return fmt.Sprintf("%10.1f %9.0f %10d %9.0f %8.0fms", float64(t.bpf.Microseconds())/1000, perRun, t.runs, perEv, float64(t.cpu.Microseconds())/1000)
}

// perEvent is a duration per workload event: runs differ in how many
// events the workload made, so tools are compared per event.
func (t toolCost) perEvent(d time.Duration) float64 {
	if t.events == 0 {
		return 0
	}
	return float64(d) / float64(t.events)
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func trunc(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// medianCost takes the median of each figure separately.
func medianCost(v []toolCost) toolCost {
	var out toolCost
	var runs, bpf, cpu, ev []float64
	for _, t := range v {
		if t.evName != "" {
			out.evName = t.evName
		}
		if t.failure != "" && t.runs == 0 {
			out.failure = t.failure
			continue
		}
		runs = append(runs, float64(t.runs))
		bpf = append(bpf, float64(t.bpf))
		cpu = append(cpu, float64(t.cpu))
		ev = append(ev, float64(t.events))
	}
	if len(runs) == 0 {
		return out
	}
	out.failure = ""
	out.runs, out.bpf, out.cpu, out.events = uint64(median(runs)), time.Duration(median(bpf)), time.Duration(median(cpu)), uint64(median(ev))
	return out
}

// measureTool starts a tool, waits until its BPF programs are loaded and
// their count settles, then runs the workload between two readings of the
// programs' statistics and of the tool's CPU time.
func measureTool(args []string, work func() (uint64, string)) toolCost {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return toolCost{failure: fmt.Sprintf("%s: %v", args[0], err)}
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	pid := cmd.Process.Pid
	var ids []uint32
	stable, last := 0, -1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ids, _, _ = attachments(pid)
		if len(ids) > 0 && len(ids) == last {
			stable++
			if stable >= 15 { // 1.5 s: sonde probes features with short-lived programs first
				break
			}
		} else {
			stable = 0
		}
		last = len(ids)
	}
	if len(ids) == 0 {
		return toolCost{failure: fmt.Sprintf("%s loaded no BPF programs within 20 s", strings.Join(args, " "))}
	}
	r0, t0 := progStats(ids)
	c0 := procCPU(pid)
	events, name := work()
	r1, t1 := progStats(ids)
	if late, _, _ := attachments(pid); len(late) != len(ids) {
		// Programs loaded during the workload count from their load.
		r1, t1 = progStats(late)
	}
	c1 := procCPU(pid)
	return toolCost{runs: r1 - r0, bpf: t1 - t0, cpu: c1 - c0, events: events, evName: name}
}
