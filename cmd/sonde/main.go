// Command sonde answers "where does the time go?": it samples on-CPU
// stacks and shows them as perf-style reports and flame graphs.
//
// main only starts the command layer (internal/cmd/commands), or, when
// sonde re-executes itself to hold a traced command, that command.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/commands"
	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// version is set by the Makefile (-ldflags -X main.version=...).
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == runctl.ChildArg {
		runctl.RunChild(os.Args[2:])
		return
	}
	stop := selfProfile(os.Getenv("SONDE_SELF_PROFILE"))
	code := cli.Execute(commands.Root(version), os.Args[1:])
	probe.RemoveTemp()
	stop()
	os.Exit(code)
}

// selfProfile profiles sonde itself when SONDE_SELF_PROFILE names a
// directory: cpu.pprof over the whole run and heap.pprof at its end, for
// finding where a tool's start, finish or memory goes (docs/internals.md).
func selfProfile(dir string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err == nil && pprof.StartCPUProfile(cpu) != nil {
		cpu.Close()
		cpu = nil
	}
	// The heap as the last collection left it, every 10 s of the run: what
	// a long recording holds while it runs, not what is left at exit.
	tick := time.NewTicker(10 * time.Second)
	go func() {
		for n := 1; ; n++ {
			<-tick.C
			if heap, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%03ds.pprof", 10*n))); err == nil {
				pprof.WriteHeapProfile(heap)
				heap.Close()
			}
		}
	}()
	return func() {
		tick.Stop()
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if heap, err := os.Create(filepath.Join(dir, "heap.pprof")); err == nil {
			runtime.GC()
			pprof.WriteHeapProfile(heap)
			heap.Close()
		}
	}
}
