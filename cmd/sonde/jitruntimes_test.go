package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// jitShare is the share of a recording's samples whose stacks hold a
// frame named like fn, and the share of those whose outermost frame is a
// thread's first (_start, or start_thread/clone3 for the threads a JVM
// runs Java on): JIT frames named and the stacks through them whole.
func jitShare(t *testing.T, dir, data, fn string) (named, whole float64) {
	t.Helper()
	folded := foldedOf(t, dir, data)
	var total, hit, reach float64
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		n, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("folded line %q", l)
		}
		total += n
		if strings.Contains(l[:i], fn) {
			hit += n
			if f := strings.SplitN(l[:i], ";", 3); len(f) > 1 && threadRoots[f[1]] {
				reach += n
			}
		}
	}
	if total == 0 || hit == 0 {
		t.Fatalf("%s: no stack names %s (%.0f samples):\n%.3000s", data, fn, total, folded)
	}
	return 100 * hit / total, 100 * reach / hit
}

// threadRoots are the first frames of a thread's stack.
var threadRoots = map[string]bool{"_start": true, "start_thread": true, "clone3": true, "clone": true}

// removeNewPerfMaps removes the perf maps a runtime wrote during the test.
func removeNewPerfMaps(t *testing.T) {
	before := map[string]bool{}
	old, _ := filepath.Glob("/tmp/perf-*.map")
	for _, f := range old {
		before[f] = true
	}
	t.Cleanup(func() {
		now, _ := filepath.Glob("/tmp/perf-*.map")
		for _, f := range now {
			if !before[f] {
				os.Remove(f)
			}
		}
	})
}

// TestRecordNodeJIT: node with --perf-basic-prof and
// --interpreted-frames-native-stack writes a perf map of its JIT code;
// record -g names the optimized spinJs from it, and the stacks go on
// through the JIT frames (frame pointers) to node's _start.
func TestRecordNodeJIT(t *testing.T) {
	node := testutil.RequireTool(t, "node", "nodejs")
	testutil.RequirePrivileged(t)
	removeNewPerfMaps(t)
	dir := t.TempDir()
	script := filepath.Join(testutil.RepoRoot(), "testdata", "jitspin.js")
	testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "node.data", "--",
		node, "--perf-basic-prof", "--interpreted-frames-native-stack", script, "2")
	named, whole := jitShare(t, dir, "node.data", "spinJs")
	t.Logf("node: spinJs in %.1f%% of samples, %.1f%% of those reach their thread's start", named, whole)
	if named < 50 || whole < 90 {
		t.Errorf("node: spinJs in %.1f%% of samples (want ≥ 50%%), %.1f%% of them reach their thread's start (want ≥ 90%%)", named, whole)
	}
}

// TestRecordJavaJIT: a JVM with -XX:+PreserveFramePointer whose perf map
// is written on request (jcmd PID Compiler.perfmap, after the hot method
// is compiled): record -g -p names the compiled spinJava from it, and the
// stacks go on through the JIT frames to the launcher's main.
func TestRecordJavaJIT(t *testing.T) {
	java := testutil.RequireTool(t, "java", "openjdk-17-jdk-headless")
	javac := testutil.RequireTool(t, "javac", "openjdk-17-jdk-headless")
	jcmd := testutil.RequireTool(t, "jcmd", "openjdk-17-jdk-headless")
	testutil.RequirePrivileged(t)
	removeNewPerfMaps(t)
	dir := t.TempDir()
	testutil.Tool(t, javac, "-d", dir, filepath.Join(testutil.RepoRoot(), "testdata", "JitSpin.java"))
	jvm := testutil.StartPiped(t, java, "-XX:+PreserveFramePointer", "-cp", dir, "JitSpin")
	if l, err := jvm.Line(); !strings.HasPrefix(l, "ready") { // its "ready" line
		t.Fatalf("the JVM printed %q (%v), not ready", l, err)
	}
	pid := jvm.Cmd.Process.Pid
	testutil.Tool(t, jcmd, strconv.Itoa(pid), "Compiler.perfmap")
	if _, err := os.Stat(fmt.Sprintf("/tmp/perf-%d.map", pid)); err != nil {
		t.Fatalf("jcmd wrote no perf map: %v", err)
	}
	testutil.MustRun(t, dir, "record", "-q", "-g", "-p", strconv.Itoa(pid), "-o", "java.data", "-d", "1")
	named, whole := jitShare(t, dir, "java.data", "spinJava")
	t.Logf("java: spinJava in %.1f%% of the JVM's samples, %.1f%% of those reach their thread's start", named, whole)
	if named < 50 || whole < 90 {
		t.Errorf("java: spinJava in %.1f%% of the JVM's samples (want ≥ 50%%), %.1f%% of them reach their thread's start (want ≥ 90%%)", named, whole)
	}
}
