package dist

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model/histogram"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// IrqTime is hardirqs' and softirqs' report: the time and count of each
// interrupt handler (or softirq vector), and with Dist their distributions.
type IrqTime struct {
	jsonout.Run
	Unit string   `json:"unit"`
	Irqs []IrqRow `json:"irqs"`
	// UnknownStart counts handler exits whose entry came before tracing;
	// Lost, runs not counted because a map was full.
	UnknownStart uint64 `json:"begun_before_tracing"`
	Lost         uint64 `json:"lost"`
	unit         histogram.Unit
	counts, dist bool
	soft         bool
}

// IrqRow is one interrupt.
type IrqRow struct {
	Irq     uint32 `json:"irq"` // irq number, or softirq vector
	Name    string `json:"name"`
	Count   uint64 `json:"count"`
	TotalNS uint64 `json:"total_ns"`
	*Dist   `json:",omitempty"`
}

// IrqRun is one interrupt as the tool measured it (Hist nil without
// distributions).
type IrqRun struct {
	Irq            uint32
	Name           string
	Count, TotalNS uint64
	Hist           *histogram.Hist
}

// NewIrqTime builds the report (soft: softirq vectors); counts shows the
// counts column instead of the time (bcc's -C).
func NewIrqTime(o Options, target string, soft, counts bool, irqs []IrqRun, unknown, lost uint64, d time.Duration) *IrqTime {
	command := "hardirqs"
	if soft {
		command = "softirqs"
	}
	r := &IrqTime{Run: jsonout.Run{Command: command, Target: target, DurationNS: jsonout.NS(d)}, Unit: o.Unit.Name,
		UnknownStart: unknown, Lost: lost, unit: o.Unit, counts: counts, soft: soft, Irqs: []IrqRow{}}
	for _, x := range irqs {
		row := IrqRow{Irq: x.Irq, Name: x.Name, Count: x.Count, TotalNS: x.TotalNS}
		if x.Hist != nil {
			d := o.Of(x.Hist)
			row.Dist, r.dist = &d, true
		}
		r.Irqs = append(r.Irqs, row)
	}
	return r
}

// WriteText prints bcc's layout: a table of totals (or counts), or with
// distributions one histogram per interrupt.
func (r *IrqTime) WriteText(w io.Writer) {
	kind := "hardirq"
	if r.soft {
		kind = "softirq"
	}
	if r.dist {
		for _, x := range r.Irqs {
			fmt.Fprintf(w, "%s = %s\n", kind, x.Name)
			x.Dist.WriteText(w, r.unit)
			fmt.Fprintln(w)
		}
	} else {
		col := "TOTAL_" + r.unit.Name
		if r.counts {
			col = "TOTAL_count"
		}
		fmt.Fprintf(w, "%-26s %11s\n", strings.ToUpper(kind), col)
		for _, x := range r.Irqs {
			v := x.TotalNS / r.unit.NS
			if r.counts {
				v = x.Count
			}
			fmt.Fprintf(w, "%-26s %11d\n", x.Name, v)
		}
	}
	fmt.Fprintf(w, "# %s time over %s; %d runs begun before tracing not counted, %d lost (map full)\n\n",
		kind, time.Duration(r.DurationNS).Round(time.Millisecond), r.UnknownStart, r.Lost)
}

// WriteJSON writes the report as one document.
func (r *IrqTime) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }
