package dist

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/bio"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

func TestLatencyPerDisk(t *testing.T) {
	dev := &pairbpf.Result{Result: &latency.Result{}, Counters: pairbpf.Counters{Drops: 1}}
	dev.Groups = map[string]*histogram.Hist{"dev 8,0": hists(1_000, 3_000), "dev 259,1": hists(20_000)}
	dev.Elapsed = 2 * time.Second
	r := NewBlockIO(Options{Unit: histogram.US}, []bio.Stage{bio.Device}, []*pairbpf.Result{dev})
	var b bytes.Buffer
	r.WriteText(&b)
	txt := b.String()
	if !strings.HasPrefix(txt, "device (issue → complete): 3 I/Os\ndisk 259,1\n") || !strings.Contains(txt, "\ndisk 8,0\n") || !strings.HasSuffix(txt, "# 1 lost\n\n") {
		t.Errorf("text:\n%s", txt)
	}
	if len(r.Stages) != 2 || r.Stages[1].Disk != "8,0" || r.Stages[1].Stats.Count != 2 || r.Lost != 1 || r.DurationNS != 2e9 {
		t.Errorf("report %+v", r)
	}
}

func hists(ns ...uint64) *histogram.Hist {
	h := &histogram.Hist{}
	for _, v := range ns {
		h.Add(v)
	}
	return h
}
