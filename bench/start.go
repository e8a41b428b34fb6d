package main

// Start-up and idle cost (issue 25): how long each BPF tool takes from its
// launch to its first event and to its exit on a 1 s run, the CPU it
// spends doing so, and what it spends over 10 s on an idle machine, beside
// the libbpf-tools peer doing the same job where one is installed.
//
// "ready" is when the tool's attachments (BPF links and perf events, found
// in /proc/PID/fd and fdinfo) first reach their final number; "first" is
// when one of the programs it holds at the end first ran (the kernel's
// run count, kernel.bpf_stats_enabled=1): the first event it saw. Tools
// whose events are rare on an idle machine (exec, block I/O, a sleeping
// target's allocations) show "—" there. The bench polls every 3 ms, so
// both are known to ±3 ms, and the polling's own CPU is the bench's.
// "verified" is the instructions the kernel's verifier processed for the
// programs the tool holds (fdinfo's verified_insns): the verifier's work.

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	startReps = flag.Int("start-reps", 3, "interleaved repetitions of each start-up run")
	startIdle = flag.Bool("start-idle", true, "measure each tool's CPU over 10 s idle (a 13 s run each, read once a second)")
	startOnly = flag.String("start-tools", "", "comma-separated tools of the start-up table to run (default all)")
)

// startCase is one row: a sonde command and its peer's.
type startCase struct {
	tool     string
	sonde    []string // arguments after the sonde binary, for a 1 s run; "DUR" is replaced by the duration
	peerName string
	peer     []string // nil: no peer installed or none exists; "DUR" as above (seconds)
}

// startRun is what one run took.
type startRun struct {
	ready, first, wall, cpu time.Duration
	firstSeen               bool
	verified                uint64
	failure                 string
}

func startCases(dir string) []startCase {
	peer := func(name string, args ...string) []string {
		if p, err := exec.LookPath(name); err == nil && filepath.Dir(p) == "/usr/sbin" {
			return append([]string{p}, args...)
		}
		return nil
	}
	out := filepath.Join(dir, "start.data")
	cs := []startCase{
		{"profile", []string{"profile", "-d", "DUR"}, "perf record -a -g", []string{*perfBin, "record", "-q", "-a", "-g", "-F", "49", "-o", filepath.Join(dir, "perf.data"), "--", "sleep", "DUR"}},
		{"profile -K", []string{"profile", "-K", "-d", "DUR"}, "", nil},
		{"offcpu", []string{"offcpu", "-d", "DUR"}, "offcputime", peer("offcputime", "DUR")},
		{"wakeup", []string{"wakeup", "-d", "DUR"}, "", nil},
		{"runqlat", []string{"runqlat", "-d", "DUR"}, "runqlat", peer("runqlat", "DUR", "1")},
		{"syscount", []string{"syscount", "-d", "DUR"}, "syscount", peer("syscount", "-d", "DUR")},
		{"biolat", []string{"biolat", "-d", "DUR"}, "biolatency", peer("biolatency", "DUR", "1")},
		{"filetop", []string{"filetop", "-d", "DUR"}, "filetop", peer("filetop", "-C", "DUR", "1")},
		{"fileslower", []string{"fileslower", "-d", "DUR"}, "", nil},
		{"memleak", []string{"memleak", "-p", "SLEEPER", "-d", "DUR"}, "", nil},
		{"memleak --kernel", []string{"memleak", "--kernel", "-d", "DUR"}, "", nil},
		{"deadlock", []string{"deadlock", "-p", "SLEEPER", "-d", "DUR"}, "", nil},
		{"cputime", []string{"cputime", "-d", "DUR"}, "", nil},
		{"execsnoop", []string{"execsnoop", "-d", "DUR"}, "", nil},
		{"record -a -g", []string{"record", "-q", "-a", "-g", "-o", out, "--", "sleep", "DUR"}, "perf record -a -g", []string{*perfBin, "record", "-q", "-a", "-g", "-o", filepath.Join(dir, "perf.data"), "--", "sleep", "DUR"}},
	}
	if *startOnly == "" {
		return cs
	}
	var keep []startCase
	for _, c := range cs {
		for _, n := range strings.Split(*startOnly, ",") {
			if c.tool == n {
				keep = append(keep, c)
			}
		}
	}
	return keep
}

func startTable(dir string) {
	old, _ := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	if err := os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0); err != nil {
		fail("start: cannot enable kernel.bpf_stats_enabled: " + err.Error())
	}
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", old, 0)
	sleeper := exec.Command("sleep", "1000")
	if err := sleeper.Start(); err != nil {
		fail("start: " + err.Error())
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := strconv.Itoa(sleeper.Process.Pid)
	expand := func(args []string, dur string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = strings.NewReplacer("DUR", dur, "SLEEPER", pid).Replace(a)
		}
		return out
	}
	cases := startCases(dir)
	fmt.Printf("12. Start-up: a 1 s run from launch (ready: attached; first: a program of the tool first ran;\n")
	fmt.Printf("    wall and CPU of the whole run; verified: instructions the verifier processed; %d interleaved\n", *startReps)
	fmt.Printf("    repetitions, medians). Goals: first ≤ 300 ms, wall ≤ 1.3 s. Idle: CPU over 10 s of a 13 s run, the\n")
	fmt.Printf("    median of the seconds in which the machine started no process ×10 (* fewer than 5 such seconds:\n")
	fmt.Printf("    the whole 10 s) (goal ≤ 30 ms)\n\n")
	fmt.Printf("    (finish: wall − ready − 1 s, the time from the end of the measurement to the exit; all in ms)\n\n")
	fmt.Printf("    %-17s %7s %7s %7s %7s %7s %9s %8s | %-18s %7s %7s %7s %7s %7s %8s\n",
		"tool", "ready", "first", "finish", "wall", "CPU", "verified", "idle", "peer", "ready", "first", "finish", "wall", "CPU", "idle")
	for _, c := range cases {
		var sonde, peer []startRun
		n := 1
		if c.peer != nil {
			n = 2
		}
		interleave("start "+c.tool, *startReps, n, func(i int) {
			if i == 0 {
				sonde = append(sonde, measureStart(append([]string{*sondeBin}, expand(c.sonde, "1")...)))
			} else {
				peer = append(peer, measureStart(expand(c.peer, "1")))
			}
		})
		var idle, peerIdle string
		if *startIdle {
			idle = idleCPU(func(d string) []string { return append([]string{*sondeBin}, expand(c.sonde, d)...) })
			if c.peer != nil {
				peerIdle = idleCPU(func(d string) []string { return expand(c.peer, d) })
			}
		}
		s := medianStart(sonde)
		line := fmt.Sprintf("    %-17s %s %9d %8s", c.tool, s.cells(), s.verified, idle)
		if s.failure != "" {
			line = fmt.Sprintf("    %-17s %s", c.tool, trunc(s.failure, 80))
		}
		if c.peer != nil {
			p := medianStart(peer)
			if p.failure != "" {
				line += fmt.Sprintf(" | %-18s failed: %s", c.peerName, trunc(p.failure, 60))
			} else {
				line += fmt.Sprintf(" | %-18s %s %8s", c.peerName, p.cells(), peerIdle)
			}
		}
		fmt.Println(line)
	}
}

func (r startRun) cells() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%7.0f", float64(d)/1e6) }
	first := "      —"
	if r.firstSeen {
		first = ms(r.first)
	}
	return ms(r.ready) + " " + first + " " + ms(r.wall-r.ready-time.Second) + " " + ms(r.wall) + " " + ms(r.cpu)
}

// idleCPU runs the tool for 13 s and reads its CPU (every thread's
// schedstat) once a second from t = 2 s to 12 s, beside the number of
// processes the machine started that second (/proc/stat): the idle figure
// is the median of the seconds in which none started, times 10, so that a
// shared machine's builds and tests (each a process for the tool's
// unwinder to load) do not count as idle. With fewer than 5 such seconds
// it is the whole 10 s, marked "*". The bench starts nothing meanwhile.
func idleCPU(args func(dur string) []string) string {
	a := args("13")
	cmd := exec.Command(a[0], a[1:]...)
	if err := cmd.Start(); err != nil {
		return "failed"
	}
	pid := cmd.Process.Pid
	time.Sleep(2 * time.Second)
	var quiet []float64
	var total time.Duration
	last, forks := procCPU(pid), machineForks()
	next := time.Now()
	for range 10 {
		next = next.Add(time.Second)
		time.Sleep(time.Until(next))
		c, f := procCPU(pid), machineForks()
		total += c - last
		if f == forks {
			quiet = append(quiet, float64(c-last))
		}
		last, forks = c, f
	}
	if err := cmd.Wait(); err != nil {
		return "failed"
	}
	if len(quiet) < 5 {
		return fmt.Sprintf("%.0f*", float64(total)/1e6)
	}
	return fmt.Sprintf("%.0f", median(quiet)*10/1e6)
}

// machineForks is the number of processes the machine has started since
// boot.
func machineForks() uint64 { return procStat("processes") }

func medianStart(rs []startRun) startRun {
	var ok []startRun
	for _, r := range rs {
		if r.failure == "" {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		if len(rs) == 0 {
			return startRun{failure: "not run"}
		}
		return rs[0]
	}
	pick := func(f func(startRun) time.Duration) time.Duration {
		v := make([]float64, len(ok))
		for i, r := range ok {
			v[i] = float64(f(r))
		}
		return time.Duration(median(v))
	}
	out := startRun{
		ready: pick(func(r startRun) time.Duration { return r.ready }),
		wall:  pick(func(r startRun) time.Duration { return r.wall }),
		cpu:   pick(func(r startRun) time.Duration { return r.cpu }),
	}
	var firsts []float64
	var verified []float64
	for _, r := range ok {
		if r.firstSeen {
			firsts = append(firsts, float64(r.first))
		}
		verified = append(verified, float64(r.verified))
	}
	if len(firsts) > len(ok)/2 {
		out.first, out.firstSeen = time.Duration(median(firsts)), true
	}
	out.verified = uint64(median(verified))
	return out
}

// measureStart runs args to their end, polling the process's BPF programs
// and attachments every 3 ms.
func measureStart(args []string) startRun {
	cmd := exec.Command(args[0], args[1:]...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return startRun{failure: err.Error()}
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	pid := cmd.Process.Pid
	var r startRun
	firstRun := map[uint32]time.Duration{}
	var last []uint32
	most := 0
	var verified uint64
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
			continue
		case <-time.After(3 * time.Millisecond):
		}
		now := time.Since(start)
		ids, attached, v := attachments(pid)
		if attached > most {
			most, r.ready = attached, now
		}
		if len(ids) > 0 {
			last, verified = ids, v
		}
		for _, id := range ids {
			if _, ok := firstRun[id]; ok {
				continue
			}
			if runs, _ := progStats([]uint32{id}); runs > 0 {
				firstRun[id] = now
			}
		}
	}
	r.wall = time.Since(start)
	if !cmd.ProcessState.Success() {
		return startRun{failure: fmt.Sprintf("%s: %v", strings.Join(args, " "), cmd.ProcessState)}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	r.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	r.verified = verified
	for _, id := range last {
		if t, ok := firstRun[id]; ok && (!r.firstSeen || t < r.first) {
			r.first, r.firstSeen = t, true
		}
	}
	return r
}
