package latency

import (
	"encoding/binary"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
)

// blockEvent builds a raw record with dev at 8 (u32) and sector at 16 (u64).
func blockEvent(dev uint32, sector uint64) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[8:], dev)
	binary.LittleEndian.PutUint64(b[16:], sector)
	return b
}

func TestCompute(t *testing.T) {
	fields := []model.Field{
		{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
		{Name: "dev", Type: "dev_t", Offset: 8, Size: 4},
		{Name: "sector", Type: "sector_t", Offset: 16, Size: 8},
	}
	p := &model.Profile{
		Meta:    model.Meta{Events: []model.EventInfo{{Name: "b:issue", Fields: fields}, {Name: "b:complete", Fields: fields}}},
		Threads: []model.Thread{{Pid: 1, Tid: 1, Comm: "dd"}, {Pid: 0, Tid: 0, Comm: "swapper"}},
		Stacks:  [][]int32{{}},
	}
	add := func(ev uint16, th int32, t uint64, dev uint32, sector uint64) {
		p.Samples = append(p.Samples, model.Sample{Time: t, Event: ev, Thread: th, Raw: blockEvent(dev, sector)})
	}
	dev := uint32(254<<20 | 0)
	add(1, 1, 50, dev, 7)    // a completion whose issue came before tracing
	add(0, 0, 100, dev, 8)   // issue sector 8
	add(0, 0, 110, dev, 16)  // issue sector 16
	add(1, 1, 300, dev, 16)  // complete 16 after 190 ns
	add(1, 1, 1100, dev, 8)  // complete 8 after 1000 ns
	add(0, 0, 2000, dev, 24) // still open at the end
	r, err := Compute(p, Options{Start: "b:issue", End: "b:complete", Key: []string{"dev", "sector"}, Per: "dev", Events: true})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Groups["dev 254,0"]
	if h == nil || h.Count() != 2 {
		t.Fatalf("groups %+v", r.Groups)
	}
	if s := h.Stats(); s.Min != 190 || s.Max != 1000 {
		t.Errorf("stats %+v", s)
	}
	if r.Unmatched != 1 || r.Pending != 1 || r.Starts != 3 || r.Ends != 3 {
		t.Errorf("counts %+v", r)
	}
	if len(r.Pairs) != 2 || r.Pairs[0].Key != "254,0,16" || r.Pairs[0].Comm != "dd" {
		t.Errorf("pairs %+v", r.Pairs)
	}
	if _, err := Compute(p, Options{Start: "b:issue", End: "b:complete", Key: []string{"sectr"}}); err == nil {
		t.Error("unknown key field accepted")
	}
	if _, err := Compute(p, Options{Start: "b:nope", End: "b:complete"}); err == nil {
		t.Error("unknown event accepted")
	}
}
