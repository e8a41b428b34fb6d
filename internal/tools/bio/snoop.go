package bio

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/tools/pairbpf"
)

// IO is one block request.
type IO struct {
	StartNS  uint64  `json:"start_ns"` // issue, CLOCK_MONOTONIC
	Comm     string  `json:"comm"`     // the submitter's when its insert was seen, else the issuer's
	Pid      int32   `json:"pid"`
	Disk     string  `json:"disk"` // major,minor
	RWBS     string  `json:"rwbs"`
	Sector   uint64  `json:"sector"`
	Bytes    uint64  `json:"bytes"`
	QueuedNS *uint64 `json:"queued_ns"` // null when the insert was not seen (no scheduler, or before tracing)
	DeviceNS uint64  `json:"device_ns"`
}

// Filter keeps requests of one process or command; zero values keep all.
type Filter struct {
	Pid  int
	Comm string
}

func (f Filter) keep(x IO) bool {
	return (f.Pid == 0 || int(x.Pid) == f.Pid) && (f.Comm == "" || x.Comm == f.Comm)
}

// SnoopResult is what a Snoop run saw besides the requests.
type SnoopResult struct {
	IOs, Lost uint64
	ExitCode  int
}

// Snoop traces every request as one chain insert → issue → complete,
// keyed by (dev, sector) in the kernel, so a request's queued and device
// times come from the same map entry; each request goes to out as it
// completes (on the ring reader's goroutine). A zero duration traces
// until ctx ends.
func Snoop(ctx context.Context, f Filter, duration time.Duration, out func(IO)) (*SnoopResult, error) {
	var specs [3]events.Spec
	for i, n := range []string{Queued.Start, Queued.End, Device.End} {
		var err error
		if specs[i], err = events.Tracepoint(n); err != nil {
			return nil, err
		}
	}
	sr := &SnoopResult{}
	o := pairbpf.Options{Start: specs[0], Mid: specs[1], End: specs[2], Key: []string{"dev", "sector"},
		Per: "rwbs", Aux: "nr_sector", Duration: duration,
		OnPair: func(p latency.Pair) {
			if x := ioOf(p); f.keep(x) {
				sr.IOs++
				out(x)
			}
		}}
	res, err := pairbpf.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	sr.Lost, sr.ExitCode = Lost(res), res.ExitCode
	return sr, nil
}

// ioOf makes a request of a chain's pair: the device time is the pair's,
// the queued time its Before.
func ioOf(p latency.Pair) IO {
	parts := strings.Split(p.Key, ",")
	sector, _ := strconv.ParseUint(parts[len(parts)-1], 10, 64)
	nsec, _ := strconv.ParseUint(p.Aux, 10, 64)
	return IO{StartNS: p.StartNS, Comm: p.Comm, Pid: p.Pid, Disk: strings.Join(parts[:len(parts)-1], ","),
		RWBS: strings.TrimPrefix(p.Group, "rwbs "), Sector: sector, Bytes: nsec * 512, QueuedNS: p.Before, DeviceNS: p.Latency}
}

// SnoopHeader is the text view's first line.
func SnoopHeader(w io.Writer) {
	fmt.Fprintf(w, "%-14s %-16s %-7s %-7s %-4s %-12s %-8s %10s %10s\n", "TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES", "QUE(us)", "LAT(us)")
}

// WriteText prints the request as one line under SnoopHeader.
func (x IO) WriteText(w io.Writer) {
	q := "-"
	if x.QueuedNS != nil {
		q = fmt.Sprintf("%.1f", float64(*x.QueuedNS)/1e3)
	}
	fmt.Fprintf(w, "%-14.6f %-16s %-7d %-7s %-4s %-12d %-8d %10s %10.1f\n",
		float64(x.StartNS)/1e9, x.Comm, x.Pid, x.Disk, x.RWBS, x.Sector, x.Bytes, q, float64(x.DeviceNS)/1e3)
}

// WriteJSON writes the request as one line (JSON Lines).
func (x IO) WriteJSON(w io.Writer) error { return jsonout.Line(w, x) }

// WriteFooter ends the text view.
func (r *SnoopResult) WriteFooter(w io.Writer) {
	fmt.Fprintf(w, "# %d I/Os, %d lost\n", r.IOs, r.Lost)
}
