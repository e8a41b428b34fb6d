package commands

import (
	"fmt"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/symbolize/debuginfod"
)

var (
	debuginfodClient *debuginfod.Client
	debuginfodOnce   sync.Once
)

// useDebuginfod lets symbolization ask the servers of $DEBUGINFOD_URLS
// (when on and any are named) and, once the command ends, says in one line
// on stderr what was fetched or could not be.
func useDebuginfod(on bool) {
	debuginfodClient = nil
	symbolize.SetDebuginfod(nil)
	if !on {
		return
	}
	c := debuginfod.FromEnv()
	if c == nil {
		return
	}
	debuginfodClient = c
	symbolize.SetDebuginfod(c)
	debuginfodOnce.Do(func() {
		cobra.OnFinalize(func() {
			if s := debuginfodClient.Summary(); s != "" {
				fmt.Fprintln(os.Stderr, "sonde: "+s)
			}
		})
	})
}
