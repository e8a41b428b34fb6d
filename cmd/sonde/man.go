package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes man pages from the same definitions the command line
// parses with, so they cannot drift from it (make man).
func newManCmd(root *cobra.Command) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man",
		Short: "write a man page per command (sonde.1, sonde-record.1, …) into a directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{Title: "SONDE", Section: "1", Source: "sonde " + version, Manual: "sonde manual"}
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return fmt.Errorf("writing man pages: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "man", "directory to write the pages into")
	return cmd
}
