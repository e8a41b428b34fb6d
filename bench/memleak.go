package main

import (
	"flag"
	"fmt"
	"os/exec"
)

var memleakReps = flag.Int("memleak-reps", 3, "interleaved repetitions of each memleak configuration")

// memleakCalls is what testdata/leak.c's timed loop does: 205,000
// allocation calls (200,000 churned, 5,000 leaked) and 200,000 frees.
const memleakCalls = 205000

// memleakScript has bpftrace do what sonde memleak does per event on the
// same entry points: the size asked for per thread at the entry; at the
// return the address with its size and time, and the bytes summed per user
// stack; at a free the address forgotten. LIBC is replaced by the path.
const memleakScript = `
uprobe:LIBC:malloc,uprobe:LIBC:valloc,uprobe:LIBC:pvalloc { @size[tid] = arg0; }
uprobe:LIBC:calloc { @size[tid] = arg0 * arg1; }
uprobe:LIBC:realloc { delete(@addr[arg0]); @size[tid] = arg1; }
uprobe:LIBC:reallocarray { delete(@addr[arg0]); @size[tid] = arg1 * arg2; }
uprobe:LIBC:aligned_alloc,uprobe:LIBC:mmap { @size[tid] = arg1; }
uprobe:LIBC:posix_memalign { @size[tid] = arg2; @memptr[tid] = arg0; }
uretprobe:LIBC:malloc,uretprobe:LIBC:valloc,uretprobe:LIBC:pvalloc,uretprobe:LIBC:calloc,uretprobe:LIBC:realloc,
uretprobe:LIBC:reallocarray,uretprobe:LIBC:aligned_alloc,uretprobe:LIBC:mmap /@size[tid]/ {
	@addr[retval] = @size[tid]; @ts[retval] = nsecs; @bytes[ustack] = sum(@size[tid]); delete(@size[tid]);
}
uretprobe:LIBC:posix_memalign /@size[tid]/ {
	$p = *(uint64 *)uptr(@memptr[tid]);
	@addr[$p] = @size[tid]; @ts[$p] = nsecs; @bytes[ustack] = sum(@size[tid]); delete(@size[tid]);
}
uprobe:LIBC:free,uprobe:LIBC:munmap { delete(@addr[arg0]); delete(@ts[arg0]); }
END { clear(@addr); clear(@ts); clear(@size); clear(@memptr); clear(@bytes); }
`

// memleakCost times testdata/leak.c's allocation loop alone, under sonde
// memleak (every allocation, and byte sampling) and under bpftrace doing
// the same probes, interleaved; it prints the cost per allocation call.
func memleakCost(dir string) {
	bt, err := exec.LookPath("bpftrace")
	if err != nil {
		fail("bpftrace not found: apt-get install bpftrace")
	}
	leak := gcc(dir, "leak", "testdata/leak.c", "-O2", "-g")
	script := libcProbes(memleakScript)
	configs := []config{
		{"untraced", []string{leak, "-t"}},
		{"sonde memleak", []string{*sondeBin, "memleak", "--", leak, "-t"}},
		{"sonde memleak --sample-bytes 4096", []string{*sondeBin, "memleak", "--sample-bytes", "4096", "--", leak, "-t"}},
		{"bpftrace, same probes", []string{bt, "-e", script, "-c", leak + " -t"}},
	}
	elapsed := map[string][]float64{}
	interleave("memleak", *memleakReps, len(configs), func(i int) {
		elapsed[configs[i].name] = append(elapsed[configs[i].name], selfTimed(configs[i], "elapsed_ns"))
	})
	base := median(elapsed["untraced"])
	fmt.Printf("memleak: testdata/leak.c, %d allocation calls and 200,000 frees (%d interleaved runs, medians)\n", memleakCalls, *memleakReps)
	for _, c := range configs {
		ns := median(elapsed[c.name])
		fmt.Printf("   %-36s %8.1f ms  %6.2f µs per allocation call", c.name, ns/1e6, ns/memleakCalls/1e3)
		if c.name != "untraced" {
			fmt.Printf("  (+%.2f µs traced)", (ns-base)/memleakCalls/1e3)
		}
		fmt.Println()
	}
	s, b := median(elapsed["sonde memleak"])-base, median(elapsed["bpftrace, same probes"])-base
	fmt.Printf("   ratio sonde/bpftrace added cost: %.2f (goal ≤ 1)\n", s/b)
}
