package load

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(testutil.RepoRoot(), "internal", "format", "perfdata", "testdata", name)
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	folded := filepath.Join(dir, "x.folded")
	os.WriteFile(folded, []byte("work;main;spin_a 3\n"), 0o644)
	var sonde bytes.Buffer
	sonde.WriteString(datafile.Magic)
	sondeFile := filepath.Join(dir, "x.data")
	os.WriteFile(sondeFile, sonde.Bytes(), 0o644)
	cases := map[string]Kind{
		fixture(t, "tiny.data"):         KindPerfData,
		fixture(t, "tiny-pipe.data"):    KindPerfData,
		fixture(t, "tiny.script.txt"):   KindPerfScript,
		fixture(t, "tiny.script-F.txt"): KindPerfScript,
		folded:                          KindOther,
		sondeFile:                       KindSonde,
	}
	for path, want := range cases {
		got, err := Detect(path)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", filepath.Base(path), got, err, want)
		}
	}
}

// Group gives the views groups that add up to the imported samples.
func TestProfileGroups(t *testing.T) {
	var warned []string
	p, err := Profile(fixture(t, "tiny.data"), Options{Group: true, Warn: func(w string) { warned = append(warned, w) }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Samples != nil || p.SampleCount() != 39 {
		t.Errorf("%d samples kept, %d counted; want groups of 39", len(p.Samples), p.SampleCount())
	}
	for _, w := range warned {
		if w == "" {
			t.Errorf("empty warning")
		}
	}
}

func TestSameEvents(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"cpu-clock:pppH", "cpu-clock", true},
		{"cpu-clock:u", "cpu-clock", true},
		{"cpu-clock,task-clock:ppp", "cpu-clock,task-clock", true},
		{"sched:sched_switch", "sched", false},
		{"sched:sched_switch", "sched:sched_switch", true},
		{"cpu-clock", "task-clock", false},
		{"cpu-clock", "cpu-clock,task-clock", false},
	} {
		if got := SameEvents(c.a, c.b); got != c.same {
			t.Errorf("SameEvents(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
