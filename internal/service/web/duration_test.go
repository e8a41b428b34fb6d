package web

import (
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestImportedDuration: perf script text shown in the browser says the
// span of its samples (it said "over 0 ns"), and its time lanes spread
// the samples over it.
func TestImportedDuration(t *testing.T) {
	s, err := Load([]string{filepath.Join(testutil.RepoRoot(), "internal/format/perfdata/testdata/tiny.script.txt")})
	if err != nil {
		t.Fatal(err)
	}
	var meta MetaDoc
	getJSON(t, s, "/api/meta", &meta)
	if len(meta.Inputs) != 1 || meta.Inputs[0].Recording.DurationNS != 76_278_000 || !meta.Inputs[0].Timed {
		t.Errorf("meta %+v, want 76.278 ms of timed samples", meta.Inputs)
	}
	var tl TimeDoc
	getJSON(t, s, "/api/time?f=0", &tl)
	if tl.DurationNS < 76_278_000 {
		t.Errorf("time lanes over %d ns, want the samples' 76.278 ms", tl.DurationNS)
	}
}
