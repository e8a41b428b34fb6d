package main

import (
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestVDSONamedEverywhere: a workload that spends its time in
// clock_gettime (cpuwork alt spins on it) has vDSO frames, and the live
// view (top -b) names them with the same function as a recording does, not
// as [vdso]+0xoffset.
func TestVDSONamedEverywhere(t *testing.T) {
	dir, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})

	// The duration ends the endless workload with SIGTERM: exit 143 is its.
	if r := testutil.Run(t, dir, "record", "-q", "-F", "1999", "-o", "v.data", "--duration", "1s", "--", bin, "alt"); r.Code != 143 {
		t.Fatalf("record: exit %d, want the workload's 143 (SIGTERM)\n%s", r.Code, r.Stderr)
	}
	rep := reportJSON(t, dir, "-i", "v.data", "--no-children", "--sort", "dso,sym")
	recorded := map[string]bool{}
	for _, e := range rep.Entries {
		if e.Keys["dso"] == "[vdso]" {
			recorded[e.Keys["sym"]] = true
		}
	}
	if len(recorded) == 0 {
		t.Fatalf("the recording has no [vdso] frames: %+v", rep.Entries)
	}
	for s := range recorded {
		if strings.Contains(s, "+0x") {
			t.Errorf("recording left a vDSO frame unnamed: %s", s)
		}
	}

	testutil.Start(t, bin, "alt")
	r := testutil.MustRun(t, dir, "top", "-b", "2", "-i", "700ms", "--rows", "40")
	live := map[string]bool{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		// "  12.34%  [.] clock_gettime   [vdso]"
		if len(f) == 4 && f[1] == "[.]" && f[3] == "[vdso]" {
			live[f[2]] = true
		}
	}
	if len(live) == 0 {
		t.Fatalf("top shows no [vdso] frames:\n%s", r.Stdout)
	}
	for s := range live {
		if strings.Contains(s, "+0x") || !recorded[s] {
			t.Errorf("top names a vDSO frame %q; the recording names them %v", s, recorded)
		}
	}
	t.Logf("vDSO functions: recorded %v, live %v", recorded, live)
}
