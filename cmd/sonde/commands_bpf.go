package main

import "github.com/spf13/cobra"

// bpfCommands are the live BPF tools.
func bpfCommands() []*cobra.Command {
	return []*cobra.Command{
		bridge("profile", "count on-CPU stacks in the kernel with BPF (low overhead, system-wide or one process)", runProfile),
		bridge("offcpu", "where threads block: blocked time per stack, summed in the kernel (BPF)", runOffcpu),
		bridge("wakeup", "blocked time per blocked stack and waker stack, as one chain (BPF)", runWakeup),
		bridge("funclat", "latency distribution of user functions (uprobes) or kernel functions (fentry/kprobes)", runFunclat),
		bridge("syscount", "system calls counted and timed in the kernel, named from the architecture's table", runSyscount),
		bridge("runqlat", "run-queue latency: how long runnable tasks wait for a CPU (BPF)", runRunqlat),
		bridge("biolat", "block I/O latency distributions per disk, with queued and device stages (BPF)", runBiolat),
		bridge("biosnoop", "one line per block I/O: who, disk, sector, bytes, queued and device time (BPF)", runBiosnoop),
		bridge("cputime", "exact on-CPU time per task and CPU from sched_switch, every interval; streams to another machine", runCputime),
		bridge("listen", "receive cputime streams (udp:// or tcp://) and print them tagged by sender", runListen),
		bridge("top", "live view: hot symbols system-wide and exact per-task CPU time", runTop),
	}
}
