package diff

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/modeltest"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestDiffGolden(t *testing.T) {
	base := modeltest.Sample()
	cur := modeltest.Sample()
	// The new profile spends half as long in spin_a: drop every other sample.
	var keep = cur.Samples[:0]
	for i, s := range cur.Samples {
		if s.Stack == 0 && i%2 == 0 {
			continue
		}
		keep = append(keep, s)
	}
	cur.Samples = keep
	rows := Compare(base, cur, Options{})
	var buf bytes.Buffer
	WriteText(&buf, base, cur, rows)
	testutil.Golden(t, filepath.Join("testdata", "diff.golden"), buf.Bytes())
	for _, r := range rows {
		if r.Sym == "spin_a" && r.Delta >= 0 {
			t.Errorf("spin_a share did not fall: %+v", r)
		}
	}
	for _, r := range Compare(base, base, Options{}) {
		if r.Delta != 0 {
			t.Errorf("self-diff delta: %+v", r)
		}
	}
	if rows := Compare(base, cur, Options{Sort: []string{"dso"}}); len(rows) != 2 {
		t.Errorf("--sort dso gave %d rows, want one per object", len(rows))
	}
}
