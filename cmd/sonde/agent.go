package main

import (
	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/remote"
)

// newAgentCmd is `sonde agent` (internal/remote): it checks remote command
// lines against this very tree.
func newAgentCmd() *cobra.Command { return remote.NewAgentCmd(newRoot) }
