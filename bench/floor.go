package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// floorProg makes bench hold an empty sched_switch program (tp_btf, as
// cputime's) until SIGINT: the cost table's peer for cputime, so its goal
// (≤ 150 ns a switch) is read beside what the kernel's dispatch and
// bpf_stats cost on this machine in the same run.
var floorProg = flag.Bool("floor-prog", false, "(internal) hold an empty tp_btf sched_switch program until SIGINT")

// holdFloorProg loads and attaches the empty program, then waits.
func holdFloorProg() {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_switch",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		fail(fmt.Sprintf("empty program: %v", err))
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		fail(fmt.Sprintf("attaching the empty program: %v", err))
	}
	defer l.Close()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}

// floorCommand is the command line that runs holdFloorProg.
func floorCommand() []string {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{self, "-floor-prog"}
}
