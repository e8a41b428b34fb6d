// Command sonde answers "where does the time go?": it samples on-CPU
// stacks and shows them as perf-style reports and flame graphs.
//
// main only starts the command layer (internal/cmd/commands), or, when
// sonde re-executes itself to hold a traced command, that command.
package main

import (
	"os"

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
	code := cli.Execute(commands.Root(version), os.Args[1:])
	probe.RemoveTemp()
	os.Exit(code)
}
