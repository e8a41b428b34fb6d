package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/modeltest"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), got)
}

func TestReportGolden(t *testing.T) {
	cases := []struct {
		name string
		opts Options
	}{
		{"children_caller", Options{Children: true, Graph: "caller", GraphMin: 0.5}},
		{"self_callee", Options{Children: false, Graph: "callee", GraphMin: 0.5}},
		{"self_nograph", Options{Graph: "none"}},
		{"sort_srcline", Options{Sort: []string{"srcline"}, Graph: "none"}},
		{"sort_tid_cpu", Options{Sort: []string{"tid", "cpu"}, Graph: "none"}},
		{"filter_sym", Options{Graph: "none", Syms: []string{"spin_a"}}},
		{"percent_limit", Options{Graph: "none", PercentLimit: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Build(modeltest.Sample(), c.opts).WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, buf.Bytes())
		})
	}
}

func TestReportNumbers(t *testing.T) {
	r := Build(modeltest.Sample(), Options{Children: true, Graph: "none"})
	find := func(sym string) *Entry {
		for _, e := range r.Entries {
			if e.Keys["sym"] == sym {
				return e
			}
		}
		t.Fatalf("no entry %s", sym)
		return nil
	}
	// 830 samples: spin_a 500+100, spin_b 200, write path 20, unnamed 10.
	if got := find("spin_a").SelfPct; got < 72.28 || got > 72.30 {
		t.Errorf("spin_a self %.3f%%, want 600/830", got)
	}
	if got := find("main").ChildPct; got != 100 {
		t.Errorf("main children %.3f%%, want 100", got)
	}
	if got := find("main").SelfPct; got != 0 {
		t.Errorf("main self %.3f%%, want 0", got)
	}
	if e := find("ksys_write"); !e.Kernel {
		t.Errorf("ksys_write not marked kernel")
	}
	if e := find("work+0x5000"); e.Self == 0 {
		t.Errorf("unnamed frame not reported as dso+offset")
	}
}

func TestParseSort(t *testing.T) {
	if _, err := ParseSort("comm,bo-gus"); err == nil {
		t.Error("bad key accepted")
	}
	keys, _ := ParseSort("comm,bogus")
	if err := CheckFieldKeys(modeltest.Sample(), keys); err == nil {
		t.Error("field key accepted for a recording without tracepoints")
	}
	k, err := ParseSort("symbol,cpu")
	if err != nil || k[0] != "sym" || k[1] != "cpu" {
		t.Errorf("got %v %v", k, err)
	}
}
