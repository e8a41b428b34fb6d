package bio

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/latency"
	"github.com/sonde-dev/sonde/internal/pairbpf"
	"github.com/sonde-dev/sonde/internal/view/jsonout"
)

// SnoopStages are the stages biosnoop pairs: a request is its device pair
// joined with the queued pair that ended when it was issued.
var SnoopStages = []Stage{Queued, Device}

// SnoopOptions are SnoopStages' run options: pairs kept, with the
// operation (rwbs) and size (nr_sector) of each request.
var SnoopOptions = Options{Per: "rwbs", Aux: "nr_sector", Events: true}

// IO is one block request.
type IO struct {
	StartNS  uint64  `json:"start_ns"` // issue, CLOCK_MONOTONIC
	Comm     string  `json:"comm"`     // the submitter's, when its queued stage was seen
	Pid      int32   `json:"pid"`
	Disk     string  `json:"disk"` // major,minor
	RWBS     string  `json:"rwbs"`
	Sector   uint64  `json:"sector"`
	Bytes    uint64  `json:"bytes"`
	QueuedNS *uint64 `json:"queued_ns"` // null when the insert was not seen (no scheduler, or before tracing)
	DeviceNS uint64  `json:"device_ns"`
}

// Snoop is biosnoop's report: every request, in issue order.
type Snoop struct {
	IOs  []IO
	Lost uint64
}

// Filter keeps requests of one process or command; zero values keep all.
type Filter struct {
	Pid  int
	Comm string
}

// NewSnoop joins the results of a run of SnoopStages.
func NewSnoop(res []*pairbpf.Result, f Filter) *Snoop {
	queued := map[string][]latency.Pair{}
	for _, p := range res[0].Pairs {
		queued[p.Key] = append(queued[p.Key], p)
	}
	s := &Snoop{}
	for _, p := range res[1].Pairs {
		x := join(p, queued[p.Key])
		if (f.Pid != 0 && int(x.Pid) != f.Pid) || (f.Comm != "" && x.Comm != f.Comm) {
			continue
		}
		s.IOs = append(s.IOs, x)
	}
	sort.SliceStable(s.IOs, func(i, j int) bool { return s.IOs[i].StartNS < s.IOs[j].StartNS })
	for _, r := range res {
		s.Lost += lost(r)
	}
	return s
}

// join makes a request of its device pair and the queued pair (of the same
// dev,sector key) that ended within a microsecond of its issue.
func join(dev latency.Pair, queued []latency.Pair) IO {
	parts := strings.Split(dev.Key, ",")
	sector, _ := strconv.ParseUint(parts[len(parts)-1], 10, 64)
	nsec, _ := strconv.ParseUint(dev.Aux, 10, 64)
	x := IO{StartNS: dev.StartNS, Comm: dev.Comm, Pid: dev.Pid, Disk: strings.Join(parts[:len(parts)-1], ","),
		RWBS: strings.TrimPrefix(dev.Group, "rwbs "), Sector: sector, Bytes: nsec * 512, DeviceNS: dev.Latency}
	for _, q := range queued {
		// Both programs run on block_rq_issue and read the clock
		// separately: the queued end may fall just before or after.
		end := q.StartNS + q.Latency
		if max(end, dev.StartNS)-min(end, dev.StartNS) < 1000 {
			lat := q.Latency
			x.QueuedNS = &lat
			x.Comm, x.Pid = q.Comm, q.Pid // the submitter, not the dispatcher
			break
		}
	}
	return x
}

// WriteText prints one line per request and a footer.
func (s *Snoop) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%-14s %-16s %-7s %-7s %-4s %-12s %-8s %10s %10s\n", "TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES", "QUE(us)", "LAT(us)")
	for _, x := range s.IOs {
		q := "-"
		if x.QueuedNS != nil {
			q = fmt.Sprintf("%.1f", float64(*x.QueuedNS)/1e3)
		}
		fmt.Fprintf(w, "%-14.6f %-16s %-7d %-7s %-4s %-12d %-8d %10s %10.1f\n",
			float64(x.StartNS)/1e9, x.Comm, x.Pid, x.Disk, x.RWBS, x.Sector, x.Bytes, q, float64(x.DeviceNS)/1e3)
	}
	fmt.Fprintf(w, "# %d I/Os, %d lost\n", len(s.IOs), s.Lost)
}

// WriteJSON writes one line per request (JSON Lines).
func (s *Snoop) WriteJSON(w io.Writer) error {
	for _, x := range s.IOs {
		if err := jsonout.Line(w, x); err != nil {
			return err
		}
	}
	return nil
}
