package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// NewManCmd writes man pages from the same definitions the command line
// parses with, so they cannot drift from it (make man). source names the
// program and version in the pages' footer.
func NewManCmd(root *cobra.Command, source string) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "man",
		Short: "write a man page per command (" + root.Name() + ".1, " + root.Name() + "-record.1, …) into a directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
			root.DisableAutoGenTag = true
			// No title: each page's is its command's path in capitals
			// (SONDE-RECORD for sonde-record.1), as man(1) shows it.
			hdr := &doc.GenManHeader{Section: "1", Source: source, Manual: root.Name() + " manual"}
			if err := doc.GenManTree(root, hdr, dir); err != nil {
				return fmt.Errorf("writing man pages: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "man", "directory to write the pages into")
	return cmd
}

// NewVersionCmd prints the version line, as --version does.
func NewVersionCmd(line string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), line); err != nil {
				return fmt.Errorf("writing the version: %w", err)
			}
			return nil
		},
	}
}
