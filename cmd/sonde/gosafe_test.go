package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// funclat on a Go program must not change it (a uretprobe on a goroutine
// stack makes the runtime abort: "unexpected return pc"), and its call
// counts are exact although goroutines move between threads and their
// stacks grow and move during the calls.
func TestFunclatGoProgramUnharmed(t *testing.T) {
	dir, bin := testutil.GoWorkload(t, "goprog", "goprog")
	want := testutil.Tool(t, bin, "500")
	calls := map[string]uint64{}
	for _, f := range strings.Fields(string(want)) {
		if k, v, ok := strings.Cut(f, "="); ok && k != "checksum" {
			n, _ := strconv.ParseUint(v, 10, 64)
			calls["goprog:main."+k] = n
		}
	}

	// The program waits 3 s before working, so funclat attaches first
	// even on a loaded machine (it refuses a pid that has already exited).
	prog := exec.Command(bin, "500", "3s")
	var progOut strings.Builder
	prog.Stdout = &progOut
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	r := testutil.MustRun(t, dir, "funclat", "--json", "-p", strconv.Itoa(prog.Process.Pid), "-d", "7",
		bin+":main.work", bin+":main.deep")
	if err := prog.Wait(); err != nil {
		t.Fatalf("the traced Go program failed: %v\n%s", err, progOut.String())
	}
	if progOut.String() != string(want) {
		t.Errorf("traced output differs:\n%s\nuntraced:\n%s", progOut.String(), want)
	}
	var rep struct {
		Attach    string `json:"attach"`
		Functions []struct {
			Name    string `json:"name"`
			Untimed uint64 `json:"untimed"`
			Stats   struct {
				Count uint64 `json:"count"`
			} `json:"stats"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("funclat JSON: %v\n%s", err, r.Stdout)
	}
	if !strings.Contains(rep.Attach, "Go") {
		t.Errorf("attach mode %q does not say the Go path ran", rep.Attach)
	}
	for _, f := range rep.Functions {
		got := f.Stats.Count + f.Untimed
		t.Logf("%s: %d timed + %d untimed (stack moved) = %d calls, program says %d", f.Name, f.Stats.Count, f.Untimed, got, calls[f.Name])
		if got != calls[f.Name] {
			t.Errorf("%s: %d calls counted, the program made %d", f.Name, got, calls[f.Name])
		}
		if f.Stats.Count < got*9/10 {
			t.Errorf("%s: only %d of %d calls timed", f.Name, f.Stats.Count, got)
		}
	}
	if len(rep.Functions) != 2 {
		t.Errorf("%d functions reported, want 2", len(rep.Functions))
	}
}
