package diff

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
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
	WriteText(&buf, base, cur, rows, TextOptions{})
	testutil.Golden(t, filepath.Join("testdata", "diff.golden"), buf.Bytes())
	buf.Reset()
	WriteText(&buf, base, cur, rows, TextOptions{Samples: true, Period: true})
	testutil.Golden(t, filepath.Join("testdata", "diff-absolute.golden"), buf.Bytes())
	for _, r := range rows {
		if r.Sym == "spin_a" && r.Delta >= 0 {
			t.Errorf("spin_a share did not fall: %+v", r)
		}
	}
	// The absolute columns add up to each profile's totals.
	var bs, ns, bp, np uint64
	for _, r := range rows {
		bs, ns, bp, np = bs+r.BaseSamples, ns+r.NewSamples, bp+r.BasePeriod, np+r.NewPeriod
	}
	if bs != base.SampleCount() || ns != cur.SampleCount() || bp != totalPeriod(base) || np != totalPeriod(cur) {
		t.Errorf("rows add up to %d/%d samples and %d/%d periods; the profiles hold %d/%d and %d/%d",
			bs, ns, bp, np, base.SampleCount(), cur.SampleCount(), totalPeriod(base), totalPeriod(cur))
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

func totalPeriod(p *model.Profile) uint64 {
	var n uint64
	for _, s := range p.Samples {
		n += s.Period
	}
	return n
}
