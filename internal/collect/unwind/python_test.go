package unwind

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestPythonWalkCost: the walker's cost per sample on python3.11 with its
// stack 20 Python frames deep, with the Python frames taken and without
// (the native walk), and what the Python walk costs the verifier (the
// walker's program loaded with and without it). Logged for
// docs/interpreters.md; the stacks with Python frames must hold them.
func TestPythonWalkCost(t *testing.T) {
	testutil.RequirePrivileged(t)
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		t.Skip(err)
	}
	// 20 Python frames deep for 60 s.
	cmd := testutil.StartReady(t, py, filepath.Join(testutil.RepoRoot(), "testdata/pydeep.py"), "60").Cmd
	noPy := compileWalker(t, true)
	for _, c := range []struct {
		name     string
		object   string
		on       bool
		minFrame float64 // Python frames per sample, at least
	}{
		{"native walk (compiled without the Python walk)", noPy, false, 0},
		{"Python walk compiled in, process not told", "", false, 0},
		{"Python frames taken", "", true, 19},
	} {
		testWalkerObject, walkPython = c.object, c.on
		counts, _, per, _ := walkTarget(t, cmd.Process.Pid, 999, 2*time.Second, walkerProgWalkSample)
		testWalkerObject, walkPython = "", false
		var total, frames, pyFrames uint64
		for id, n := range counts {
			total += n
			s := walked[t.Name()][id]
			frames += n * uint64(len(s.PCs))
			for _, pc := range s.PCs {
				if _, end := python.Pid(pc); python.IsFrame(pc) && !end {
					pyFrames += n
				}
			}
		}
		each := float64(pyFrames) / float64(max(total, 1))
		t.Logf("%s: %d samples, %.1f frames each (%.1f Python), %v per sample", c.name, total,
			float64(frames)/float64(max(total, 1)), each, per)
		if each < c.minFrame {
			t.Errorf("%s: %.1f Python frames per sample, want ≥ %.0f", c.name, each, c.minFrame)
		}
	}
	for _, noPy := range []bool{false, true} {
		load, insns := verifyWalker(t, compileWalker(t, noPy))
		t.Logf("walker program without the Python walk %v: verified %d instructions, loaded in %v (best of 3)", noPy, insns, load)
	}
}

// compileWalker compiles walker.bpf.c, with -DSONDE_NO_PYTHON when noPy,
// as bpfgen does, and returns the object's path.
func compileWalker(t *testing.T, noPy bool) string {
	t.Helper()
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Skip("no clang")
	}
	obj := filepath.Join(t.TempDir(), "walker.o")
	args := []string{"-n", "19", clang, "-O2", "-mcpu=v1", "-g", "-Wall", "-target", "bpfel", "-D__TARGET_ARCH_x86",
		"-I", filepath.Join(testutil.RepoRoot(), "bpf", "include"), "-c", "walker.bpf.c", "-o", obj}
	if noPy {
		args = append(args, "-DSONDE_NO_PYTHON")
	}
	if out, err := exec.Command("nice", args...).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	return obj
}

// verifyWalker loads obj's walk_sample program three times: the best
// load time and the instructions the verifier processed.
func verifyWalker(t *testing.T, obj string) (time.Duration, int) {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	best, insns := time.Duration(0), 0
	for i := 0; i < 3; i++ {
		spec, err := ebpf.LoadCollectionSpec(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := Configure(spec, 1<<20); err != nil {
			t.Fatal(err)
		}
		for k, v := range Consts() {
			if vs := spec.Variables[k]; vs != nil {
				vs.Set(v)
			}
		}
		for name := range spec.Programs {
			if name != walkerProgWalkSample {
				delete(spec.Programs, name)
			}
		}
		t0 := time.Now()
		coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}})
		d := time.Since(t0)
		if err != nil {
			t.Fatalf("loading: %v", err)
		}
		if m := regexp.MustCompile(`processed (\d+) insns`).FindStringSubmatch(coll.Programs[walkerProgWalkSample].VerifierLog); m != nil {
			insns, _ = strconv.Atoi(m[1])
		}
		coll.Close()
		if best == 0 || d < best {
			best = d
		}
	}
	return best, insns
}
