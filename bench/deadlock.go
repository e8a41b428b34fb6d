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
	onlyDeadlock = flag.Bool("deadlock", false, "run only the deadlock cost comparison (sonde deadlock vs bpftrace vs untraced)")
	dlRounds     = flag.Int("deadlock-rounds", 100000, "lock_a → lock_b rounds of the lock workload (4 lock operations each)")
)

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
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "deadlock.c")
	bin := filepath.Join(dir, "deadlock")
	if out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		fail(fmt.Sprintf("gcc: %v %s", err, out))
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if runtime.GOARCH == "arm64" {
		libc = "/lib/aarch64-linux-gnu/libc.so.6"
	}
	script, empty := filepath.Join(dir, "deadlock.bt"), filepath.Join(dir, "empty.bt")
	for p, text := range map[string]string{script: deadlockScript, empty: emptyScript} {
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "LIBC", libc)), 0o644); err != nil {
			fail(err.Error())
		}
	}
	work := []string{bin, "bench", strconv.Itoa(*dlRounds)}
	configs := map[string][]string{
		"untraced":       work,
		"sonde deadlock": append([]string{*sondeBin, "deadlock", "--json", "--"}, work...),
		"bpftrace":       {"bpftrace", "-q", "-c", strings.Join(work, " "), script},
		"empty uprobes":  {"bpftrace", "-q", "-c", strings.Join(work, " "), empty},
	}
	order := []string{"untraced", "empty uprobes", "sonde deadlock", "bpftrace"}
	ns := map[string][]float64{}
	var ops float64
	for r := 0; r < *reps; r++ {
		for i := range order {
			c := order[(i+r)%len(order)]
			o, t := lockLoop(configs[c])
			ops = o
			ns[c] = append(ns[c], t)
		}
		fmt.Fprintf(os.Stderr, "\rdeadlock: repetition %d/%d", r+1, *reps)
	}
	fmt.Fprintln(os.Stderr)
	base := median(ns["untraced"])
	fmt.Printf("\n6. Lock-order tracing: %d rounds of lock_a → lock_b (%.0f lock operations), %d interleaved runs, medians\n", *dlRounds, ops, *reps)
	per := map[string]float64{}
	for _, c := range order {
		t := median(ns[c])
		per[c] = (t - base) / ops
		fmt.Printf("   %-15s %9.1f ms  %8.0f ns per lock operation  %+7.0f ns added\n", c, t/1e6, t/ops, per[c])
	}
	if per["bpftrace"] > 0 {
		fmt.Printf("   sonde's added cost per operation / bpftrace's: %.2f (goal ≤ 1)\n", per["sonde deadlock"]/per["bpftrace"])
	}
	if floor := per["empty uprobes"]; per["bpftrace"] > floor {
		fmt.Printf("   above the uprobe trap alone (%.0f ns): sonde %+.0f ns, bpftrace %+.0f ns per operation, ratio %.2f\n",
			floor, per["sonde deadlock"]-floor, per["bpftrace"]-floor, (per["sonde deadlock"]-floor)/(per["bpftrace"]-floor))
	}
}

var opsLine = regexp.MustCompile(`ops (\d+) elapsed_ns (\d+)`)

// lockLoop runs args and returns the loop's lock operations and time.
func lockLoop(args []string) (float64, float64) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	m := opsLine.FindSubmatch(out)
	if err != nil || m == nil {
		fail(fmt.Sprintf("%s: %v\n%s", strings.Join(args, " "), err, out))
	}
	ops, _ := strconv.ParseFloat(string(m[1]), 64)
	t, _ := strconv.ParseFloat(string(m[2]), 64)
	return ops, t
}
