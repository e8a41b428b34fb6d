package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestRecordNamesAProgramOfAnotherMountNamespace: a program that exists
// only in its own mount namespace (a tmpfs mounted there, as a container's
// root is) is named in a system-wide recording that ends after it exited.
func TestRecordNamesAProgramOfAnotherMountNamespace(t *testing.T) {
	testutil.RequireTool(t, "unshare", "util-linux")
	dir, bin := testutil.Workload(t, "work", []string{"work.c"})
	root := mkdir(t, dir, "nsroot")
	script := fmt.Sprintf("mount -t tmpfs none %[1]s && cp %[2]s %[1]s/innerhot && exec %[1]s/innerhot 1s", root, bin)
	// With -g the unwinder holds the file for its tables; without it only
	// the recording's own hold keeps it reachable after the exit.
	for _, g := range []string{"-g", "--call-graph=no"} {
		data := "ns" + g + ".data"
		testutil.MustRun(t, dir, "record", "-q", "-a", g, "-o", data, "--",
			"unshare", "-m", "--propagation", "private", "sh", "-c", script)
		if _, err := os.Stat(filepath.Join(root, "innerhot")); err == nil {
			t.Fatal("the program is visible outside its mount namespace: the test proves nothing")
		}
		checkWorkNamed(t, dir, data, "innerhot")
	}
}

// checkWorkNamed checks that testdata/work.c, run as comm, is named in
// recording data: spin_a and spin_b hold its samples, and at most 1% of
// them are unnamed offsets in its binary.
func checkWorkNamed(t *testing.T, dir, data, comm string) {
	t.Helper()
	rep := reportJSON(t, dir, "-i", data, "--no-children", "--comm", comm, "--sort", "dso,sym")
	unnamed := 0.0
	for _, e := range rep.Entries {
		if strings.HasSuffix(e.Keys["dso"], "/"+comm) && strings.Contains(e.Keys["sym"], "+0x") {
			unnamed += e.SelfPct
		}
	}
	if a, b := selfPct(rep, "spin_a"), selfPct(rep, "spin_b"); a+b < 80 || unnamed > 1 {
		t.Fatalf("%s: %s's samples: spin_a %.1f%% spin_b %.1f%%, unnamed %.1f%%:\n%+v", data, comm, a, b, unnamed, rep.Entries)
	}
}

// TestRecordNamesADeletedTemporaryProgram: a program run from a temporary
// directory and deleted before the recording ends (as go run and go test
// do with theirs) is named in a system-wide recording.
func TestRecordNamesADeletedTemporaryProgram(t *testing.T) {
	dir, bin := testutil.Workload(t, "work", []string{"work.c"})
	tmp := mkdir(t, dir, "gone")
	script := fmt.Sprintf("cp %[2]s %[1]s/tmphot && %[1]s/tmphot 1s; rm %[1]s/tmphot", tmp, bin)
	for _, g := range []string{"-g", "--call-graph=no"} {
		data := "tmp" + g + ".data"
		testutil.MustRun(t, dir, "record", "-q", "-a", g, "-o", data, "--", "sh", "-c", script)
		checkWorkNamed(t, dir, data, "tmphot")
	}
}
