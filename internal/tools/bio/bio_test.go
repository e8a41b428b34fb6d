package bio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

func result(pairs ...latency.Pair) *pairbpf.Result {
	return &pairbpf.Result{Result: &latency.Result{Pairs: pairs}, Counters: pairbpf.Counters{Drops: 1}}
}

func TestSnoopLines(t *testing.T) {
	q := uint64(50_400)
	sda := ioOf(latency.Pair{Key: "8,0,2048", Group: "rwbs W", Aux: "8", StartNS: 1_050_000, Latency: 200_000, Comm: "dd", Pid: 77, Before: &q})
	nvme := ioOf(latency.Pair{Key: "259,1,64", Group: "rwbs R", Aux: "16", StartNS: 900_000, Latency: 70_000, Comm: "kworker", Pid: 9})
	if nvme.Disk != "259,1" || nvme.QueuedNS != nil || nvme.Bytes != 8192 || nvme.RWBS != "R" {
		t.Errorf("request without a queued stage: %+v", nvme)
	}
	if sda.QueuedNS == nil || *sda.QueuedNS != 50_400 || sda.Comm != "dd" || sda.Pid != 77 || sda.Sector != 2048 || sda.DeviceNS != 200_000 || sda.Bytes != 4096 {
		t.Errorf("request with both stages: %+v", sda)
	}
	var b bytes.Buffer
	SnoopHeader(&b)
	nvme.WriteText(&b)
	sda.WriteText(&b)
	(&SnoopResult{IOs: 2, Lost: 2}).WriteFooter(&b)
	want := `TIME(s)        COMM             PID     DISK    T    SECTOR       BYTES       QUE(us)    LAT(us)
0.000900       kworker          9       259,1   R    64           8192              -       70.0
0.001050       dd               77      8,0     W    2048         4096           50.4      200.0
# 2 I/Os, 2 lost
`
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := nvme.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var first map[string]any
	if json.Unmarshal(b.Bytes(), &first) != nil || first["queued_ns"] != nil || first["start_ns"] != 900_000.0 || !strings.HasSuffix(b.String(), "}\n") {
		t.Errorf("JSON line: %s", b.String())
	}
	// The filter applies to the submitter.
	f := Filter{Comm: "dd"}
	if !f.keep(sda) || f.keep(nvme) || !(Filter{Pid: 9}).keep(nvme) || (Filter{Pid: 9}).keep(sda) {
		t.Errorf("filter")
	}
}
