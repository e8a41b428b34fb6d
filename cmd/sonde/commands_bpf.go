package main

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/tools/memleak"
)

// bpfCommands are the live BPF tools. They take bcc's habits as well as
// perf's: a bare number after the options is how long to trace
// (`offcpu 5`), -d/--duration takes seconds or a Go duration, and options
// may follow the arguments (`funclat ./srv:handle -p 42`).
func bpfCommands() []*cobra.Command {
	return []*cobra.Command{
		newProfileCmd(), newOffcpuCmd("offcpu"), newOffcpuCmd("wakeup"), newFunclatCmd(), newSyscountCmd(),
		newRunqlatCmd(), newBiolatCmd(), newBiosnoopCmd(), newCputimeCmd(), newListenCmd(), newTopCmd(),
		newDeadlockCmd(), memleak.Command(version), newFiletopCmd(), newFileslowerCmd(),
	}
}
