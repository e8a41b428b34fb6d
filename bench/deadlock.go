package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

var dlRounds = flag.Int("deadlock-rounds", 100000, "lock_a → lock_b rounds of the lock workload (4 lock operations each)")

// deadlockScript is what bpftrace runs for the comparison: the same
// uprobes as sonde deadlock (lock, try-lock entry and return, unlock of
// mutexes and rwlocks), each acquisition's user stack and the innermost
// held lock per thread kept in maps, an edge counted per ordered pair.
// It keeps one held lock per nesting level where sonde keeps a set, and
// walks stacks by frame pointers where sonde follows unwind tables.
const deadlockScript = `
uprobe:LIBC:pthread_mutex_lock, uprobe:LIBC:pthread_rwlock_rdlock, uprobe:LIBC:pthread_rwlock_wrlock /pid == cpid/ {
	$d = @depth[tid];
	if ($d > 0) {
		@edges[pid, @held[tid, $d - 1], arg0] = count();
	}
	@held[tid, $d] = arg0;
	@where[tid, arg0] = ustack;
	@depth[tid] = $d + 1;
}
uprobe:LIBC:pthread_mutex_trylock, uprobe:LIBC:pthread_rwlock_tryrdlock, uprobe:LIBC:pthread_rwlock_trywrlock /pid == cpid/ {
	@try[tid] = arg0;
}
uretprobe:LIBC:pthread_mutex_trylock, uretprobe:LIBC:pthread_rwlock_tryrdlock, uretprobe:LIBC:pthread_rwlock_trywrlock /pid == cpid/ {
	if (retval == 0) {
		$d = @depth[tid];
		@held[tid, $d] = @try[tid];
		@where[tid, @try[tid]] = ustack;
		@depth[tid] = $d + 1;
	}
	delete(@try[tid]);
}
uprobe:LIBC:pthread_mutex_unlock, uprobe:LIBC:pthread_rwlock_unlock /pid == cpid/ {
	delete(@where[tid, arg0]);
	if (@depth[tid] > 0) {
		@depth[tid] = @depth[tid] - 1;
	}
}
END { clear(@edges); clear(@held); clear(@where); clear(@depth); clear(@try); }
`

// emptyScript puts the same uprobes in with nothing in them: the floor,
// what the kernel's uprobe trap alone costs on this machine.
const emptyScript = `
uprobe:LIBC:pthread_mutex_lock, uprobe:LIBC:pthread_rwlock_rdlock, uprobe:LIBC:pthread_rwlock_wrlock,
uprobe:LIBC:pthread_mutex_trylock, uprobe:LIBC:pthread_rwlock_tryrdlock, uprobe:LIBC:pthread_rwlock_trywrlock,
uretprobe:LIBC:pthread_mutex_trylock, uretprobe:LIBC:pthread_rwlock_tryrdlock, uretprobe:LIBC:pthread_rwlock_trywrlock,
uprobe:LIBC:pthread_mutex_unlock, uprobe:LIBC:pthread_rwlock_unlock /pid == cpid/ { }
`

// deadlockCost measures the cost per lock operation of sonde deadlock and
// of bpftrace doing the same probes, on testdata/deadlock.c's lock loop
// (which times itself, after its start), interleaved, medians.
func deadlockCost(dir string) {
	if _, err := exec.LookPath("bpftrace"); err != nil {
		fail("bpftrace not found: apt-get install bpftrace")
	}
	bin := gcc(dir, "deadlock", "testdata/deadlock.c", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread")
	// The loop pauses after its line, so the tracers' programs are still
	// loaded when their run-time statistics are read.
	work := []string{bin, "bench", strconv.Itoa(*dlRounds), "300"}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		fail("enabling BPF run-time statistics: " + err.Error())
	}
	defer stats.Close()
	configs := map[string][]string{
		"untraced":       work,
		"sonde deadlock": append([]string{*sondeBin, "deadlock", "--json", "--"}, work...),
		"bpftrace":       {"bpftrace", "-q", "-c", strings.Join(work, " "), "-e", libcProbes(deadlockScript)},
		"empty uprobes":  {"bpftrace", "-q", "-c", strings.Join(work, " "), "-e", libcProbes(emptyScript)},
	}
	order := []string{"untraced", "empty uprobes", "sonde deadlock", "bpftrace"}
	ns := map[string][]float64{}
	perRun := map[string][]float64{} // BPF ns per program run
	var ops float64
	interleave("deadlock", *reps, len(order), func(i int) {
		c := order[i]
		l := lockLoop(configs[c])
		ops = l.ops
		ns[c] = append(ns[c], l.ns)
		if l.runs > 0 {
			perRun[c] = append(perRun[c], l.bpfNs/float64(l.runs))
		}
	})
	base := median(ns["untraced"])
	fmt.Printf("\n7. Lock-order tracing: %d rounds of lock_a → lock_b (%.0f lock operations), %d interleaved runs, medians\n", *dlRounds, ops, *reps)
	per := map[string]float64{}
	for _, c := range order {
		t := median(ns[c])
		per[c] = (t - base) / ops
		fmt.Printf("   %-15s %9.1f ms  %8.0f ns per lock operation  %+7.0f ns added", c, t/1e6, t/ops, per[c])
		if len(perRun[c]) > 0 {
			fmt.Printf("  %5.0f ns in BPF per probe hit", median(perRun[c]))
		}
		fmt.Println()
	}
	if b := median(perRun["bpftrace"]); b > 0 {
		fmt.Printf("   BPF time per probe hit, sonde / bpftrace: %.2f (goal ≤ 1)\n", median(perRun["sonde deadlock"])/b)
	}
	if per["bpftrace"] > 0 {
		fmt.Printf("   sonde's added cost per operation / bpftrace's: %.2f (goal ≤ 1)\n", per["sonde deadlock"]/per["bpftrace"])
	}
	if floor := per["empty uprobes"]; per["bpftrace"] > floor {
		fmt.Printf("   above the uprobe trap alone (%.0f ns): sonde %+.0f ns, bpftrace %+.0f ns per operation, ratio %.2f\n",
			floor, per["sonde deadlock"]-floor, per["bpftrace"]-floor, (per["sonde deadlock"]-floor)/(per["bpftrace"]-floor))
	}
}

// lockCostCase is deadlock's row of the cost table: both tools
// system-wide (as every row), bpftrace with deadlockScript unfiltered,
// on the lock loop of testdata/deadlock.c (built into dir by build).
func lockCostCase(build func(string) string) costCase {
	bin := build("deadlock")
	script := libcProbes(strings.ReplaceAll(deadlockScript, " /pid == cpid/", ""))
	return costCase{tool: "deadlock", sonde: []string{"deadlock"}, peerName: "bpftrace locks", peer: []string{"bpftrace", "-e", script},
		work: func() (uint64, string) {
			out, err := exec.Command(bin, "bench", "50000").Output()
			m := opsLine.FindSubmatch(out)
			if err != nil || m == nil {
				fail(fmt.Sprintf("%s bench: %v", bin, err))
			}
			n, _ := strconv.ParseUint(string(m[1]), 10, 64)
			return n, "lock operations"
		}}
}

var opsLine = regexp.MustCompile(`ops (\d+) elapsed_ns (\d+)`)

// loop is one run of the lock loop: its lock operations and time, and
// the run count and run time of the BPF programs loaded for it.
type loop struct {
	ops, ns, bpfNs float64
	runs           uint64
}

// lockLoop runs args; when the loop's line appears, it reads the
// statistics of every BPF program loaded since the run began (the
// tracer's, under the shared lock nobody else's).
func lockLoop(args []string) loop {
	first := lastProgramID()
	cmd := exec.Command(args[0], args[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err.Error())
	}
	var stderr bytes.Buffer // bpftrace warns about RLIMIT_MEMLOCK, which 6.x kernels do not use
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		fail(err.Error())
	}
	var l loop
	found := false
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := opsLine.FindStringSubmatch(sc.Text())
		if m == nil || found {
			continue
		}
		found = true
		l.ops, _ = strconv.ParseFloat(m[1], 64)
		l.ns, _ = strconv.ParseFloat(m[2], 64)
		l.runs, l.bpfNs = programStats(first)
	}
	if err := cmd.Wait(); err != nil || !found {
		fail(fmt.Sprintf("%s: %v (loop line found: %v)\n%s", strings.Join(args, " "), err, found, stderr.String()))
	}
	return l
}

// lastProgramID is the highest id of a loaded BPF program (ids grow).
func lastProgramID() ebpf.ProgramID {
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return id
		}
		id = next
	}
}

// programStats sums the runs and run time of the programs with ids
// above first (progStats of the cost table).
func programStats(first ebpf.ProgramID) (uint64, float64) {
	var ids []uint32
	for id := first; ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		id = next
		ids = append(ids, uint32(id))
	}
	runs, rt := progStats(ids)
	return runs, float64(rt.Nanoseconds())
}
