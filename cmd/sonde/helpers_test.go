package main

// Helpers the end-to-end tests of several files share.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// mkdir makes the folder dir/name (and any missing parent) and returns its
// path; a folder that cannot be made stops the test, whose setup would
// then prove nothing.
func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// foldedOf is the recording data's stacks, folded (flamegraph --format
// folded).
func foldedOf(t *testing.T, dir, data string) string {
	t.Helper()
	return testutil.MustRun(t, dir, "flamegraph", "-i", data, "--format", "folded").Stdout
}

// cpuHog keeps a CPU busy until the test ends: what the tests measure must
// hold on a loaded machine (and a spinning shell is a process always on
// a CPU, to record).
func cpuHog(t *testing.T) *exec.Cmd {
	t.Helper()
	return testutil.Start(t, "sh", "-c", "while :; do :; done")
}
