package bio

import (
	"context"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

// inKernel says whether o's stages can be measured by bio.bpf.c, whose
// histograms stay in the kernel: it keeps no request and no field but
// the disk.
func inKernel(stages []Stage, o Options) bool {
	if o.Events || o.Aux != "" || (o.Per != "" && o.Per != "dev") {
		return false
	}
	for _, st := range stages {
		if _, ok := stageIDs[st]; !ok {
			return false
		}
	}
	return true
}

// The stages bio.bpf.c times (enum bio_stage).
const (
	stageQueued uint32 = iota
	stageDevice
	stageTotal
)

// stageIDs are the stages bio.bpf.c times, by their C value.
var stageIDs = map[Stage]uint32{Queued: stageQueued, Device: stageDevice, Total: stageTotal}

// runInKernel measures the stages with bio.bpf.c: one program per block
// tracepoint for every stage at once, the distributions counted in the
// kernel, read once at the end.
func runInKernel(ctx context.Context, stages []Stage, o Options) ([]*pairbpf.Result, error) {
	want := map[uint32]bool{}
	for _, st := range stages {
		want[stageIDs[st]] = true
	}
	queued, device, total := want[stageQueued], want[stageDevice], want[stageTotal]
	// The end first, the start last: a start without its end would only
	// fill the map.
	hooks := []bpfskel.Hook{
		bpfskel.BTFTracepoint("block_rq_complete", bioProgTpBtfComplete, bioProgRawComplete),
		bpfskel.BTFTracepoint("block_rq_issue", bioProgTpBtfIssue, bioProgRawIssue),
	}
	if queued || total {
		hooks = append(hooks, bpfskel.BTFTracepoint("block_rq_insert", bioProgTpBtfInsert, bioProgRawInsert))
	}
	var maps bioMaps
	s, err := bpfskel.Open(bpfskel.Tool{
		Name: "block I/O latency", Spec: loadBio, Maps: &maps, Cgroup: o.Cgroup,
		Consts: map[string]any{bioVarWantQueued: queued, bioVarWantDevice: device, bioVarWantTotal: total, bioVarPerDisk: o.Per == "dev"},
		Hooks:  hooks,
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	run, err := s.Run(ctx, runctl.Options{Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	var counts kernelCounts
	if err := maps.Counters.Read(&counts); err != nil {
		return nil, err
	}
	read := readHists
	if o.Per == "" {
		read = readStageHists
	}
	hists, err := read(&maps)
	if err != nil {
		return nil, err
	}
	res := make([]*pairbpf.Result, len(stages))
	for i, st := range stages {
		id := stageIDs[st]
		r := &pairbpf.Result{Result: &latency.Result{Groups: map[string]*histogram.Hist{}}, Elapsed: run.Elapsed}
		var timed uint64 // the stage's requests: its histograms count them
		for g, h := range hists {
			if g.Stage == id {
				r.Groups[groupName(g.Dev, o.Per)] = h
				timed += h.Count()
			}
		}
		r.Counters = pairbpf.Counters{Starts: timed, Ends: timed, Unmatched: counts.Unmatched,
			Full: counts.Full + counts.lost(id)}
		r.Starts, r.Ends, r.Unmatched = int(timed), int(timed+counts.Unmatched), int(counts.Unmatched)
		res[i] = r
	}
	return res, nil
}

// kernelCounts are bio.bpf.c's counters (enum bio_counter).
type kernelCounts struct {
	Unmatched  uint64 `counter:"BIO_UNMATCHED"`
	Full       uint64 `counter:"BIO_FULL"`
	LostQueued uint64 `counter:"BIO_LOST_QUEUED"`
	LostDevice uint64 `counter:"BIO_LOST_DEVICE"`
	LostTotal  uint64 `counter:"BIO_LOST_TOTAL"`
}

// lost is how many times of stage id the histogram map had no room for.
func (c kernelCounts) lost(id uint32) uint64 {
	return [...]uint64{c.LostQueued, c.LostDevice, c.LostTotal}[id]
}

// groupName is the disk as pairbpf names a group of the dev field.
func groupName(dev uint32, per string) string {
	if per == "" {
		return ""
	}
	return fmt.Sprintf("dev %d,%d", dev>>20, dev&(1<<20-1))
}

// readStageHists reads the histogram of each stage (not split by disk):
// its slots, and its exact figures merged over the CPUs.
func readStageHists(maps *bioMaps) (map[bioBioGroup]*histogram.Hist, error) {
	counts, err := bpfmaps.ArrayCounts(maps.StageHist)
	if err == nil && len(counts) < bioNstages*histogram.Slots {
		err = fmt.Errorf("%d slots, want %d", len(counts), bioNstages*histogram.Slots)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the latency histograms: %w", err)
	}
	out := map[bioBioGroup]*histogram.Hist{}
	for st := range uint32(bioNstages) {
		c := counts[int(st)*histogram.Slots : int(st+1)*histogram.Slots]
		var per []bpfskel.HistSums
		if err := maps.StageSums.Lookup(st, &per); err != nil {
			return nil, fmt.Errorf("reading the latency sums: %w", err)
		}
		tot := bpfskel.MergeCPUs(per)
		if tot.Count > 0 {
			out[bioBioGroup{Stage: st}] = bpfskel.SlotHist(c, tot, tot.SumNs, true)
		}
	}
	return out, nil
}

// readHists reads every histogram the program kept per disk: its slots,
// and its exact figures merged over the CPUs.
func readHists(maps *bioMaps) (map[bioBioGroup]*histogram.Hist, error) {
	hist, sums := maps.Hist, maps.Sums
	slots := map[bioBioGroup][]uint64{}
	err := bpfmaps.Each(hist, func(k bioBioHistKey, n uint64) {
		c := slots[k.G]
		if c == nil {
			c = make([]uint64, histogram.Slots)
			slots[k.G] = c
		}
		if int(k.Slot) < len(c) {
			c[k.Slot] += n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("reading the latency histograms: %w", err)
	}
	out := map[bioBioGroup]*histogram.Hist{}
	for g, c := range slots {
		var per []bpfskel.HistSums
		err := sums.Lookup(g, &per)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			// Its figures found the map full: the slots say them, within 1/256.
			out[g] = bpfskel.SlotHist(c, bpfskel.HistSums{}, slotSum(c), false)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the latency sums: %w", err)
		}
		tot := bpfskel.MergeCPUs(per)
		out[g] = bpfskel.SlotHist(c, tot, tot.SumNs, true)
	}
	return out, nil
}

// slotSum is the sum of the values counted in slots, each at its slot's
// middle.
func slotSum(counts []uint64) uint64 {
	var sum uint64
	for i, n := range counts {
		b := histogram.SlotBounds(i)
		sum += n * (b[0] + (b[1]-b[0])/2)
	}
	return sum
}

// bioNstages is BIO_NSTAGES: the stages bio.bpf.c keeps a histogram for.
const bioNstages = 3
