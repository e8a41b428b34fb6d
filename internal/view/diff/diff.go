// Package diff compares two profiles per (object, symbol) the way perf diff
// does: the baseline's share and the change in the new profile, matched by
// build-id when both objects have one, else by object name.
package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// Row is one compared entry.
type Row struct {
	DSO      string  `json:"dso"`
	Sym      string  `json:"sym"`
	Kernel   bool    `json:"kernel"`
	Baseline float64 `json:"baseline_percent"`
	New      float64 `json:"new_percent"`
	Delta    float64 `json:"delta_percent"`
	// The absolute figures behind the shares: samples, and the event
	// count they stand for (ns for the clock events), in each profile.
	BaseSamples uint64 `json:"baseline_samples"`
	NewSamples  uint64 `json:"new_samples"`
	BasePeriod  uint64 `json:"baseline_period"`
	NewPeriod   uint64 `json:"new_period"`
}

// Options for Compare.
type Options struct {
	Sort []string // "dso", "sym" (default both)
	Min  float64  // hide rows whose baseline and new shares are both below
}

// TextOptions add absolute columns to the text, as perf diff's --period
// and perf report's -n do (JSON always has them).
type TextOptions struct {
	Samples bool // samples in each profile
	Period  bool // event counts in each profile
}

// total is one key's self figures in one profile.
type total struct {
	pct             float64
	samples, period uint64
}

// shares returns self figures per key.
func shares(p *model.Profile, keyOf func(loc int32) (string, string, bool)) (map[string]total, map[string]Row) {
	out := map[string]total{}
	rows := map[string]Row{}
	var sum uint64
	for _, g := range p.SampleGroups() {
		sum += g.Period
	}
	for _, g := range p.SampleGroups() {
		st := p.Stacks[g.Stack]
		if len(st) == 0 || sum == 0 {
			continue
		}
		k, dso, kernel := keyOf(st[0])
		t := out[k]
		t.pct += 100 * float64(g.Period) / float64(sum)
		t.samples += g.Count
		t.period += g.Period
		out[k] = t
		if _, ok := rows[k]; !ok {
			rows[k] = Row{DSO: dso, Sym: strings.SplitN(k, "\x00", 2)[1], Kernel: kernel}
		}
	}
	return out, rows
}

// Compare diffs base against new.
func Compare(base, cur *model.Profile, o Options) []Row {
	useDSO, useSym := true, true
	if len(o.Sort) > 0 {
		useDSO, useSym = false, false
		for _, k := range o.Sort {
			useDSO = useDSO || k == "dso"
			useSym = useSym || k == "sym"
		}
	}
	// Objects are matched by build-id when both sides have one: a rebuilt
	// binary under the same name is a different object; the same binary
	// under another path is the same.
	ids := map[string]string{}
	for _, d := range base.DSOs {
		if d.BuildID != "" {
			ids[d.BuildID] = model.BaseName(d.Name)
		}
	}
	keyer := func(p *model.Profile) func(loc int32) (string, string, bool) {
		return func(loc int32) (string, string, bool) {
			dso := p.DSOName(loc)
			if l := p.Locs[loc]; l.DSO >= 0 {
				if name, ok := ids[p.DSOs[l.DSO].BuildID]; ok && p.DSOs[l.DSO].BuildID != "" {
					dso = name
				}
			}
			sym := p.FrameName(loc)
			k := ""
			if useDSO {
				k = dso
			}
			k += "\x00"
			if useSym {
				k += sym
			}
			return k, dso, p.Kind(loc).IsKernel()
		}
	}
	b, brows := shares(base, keyer(base))
	n, nrows := shares(cur, keyer(cur))
	var out []Row
	seen := map[string]bool{}
	add := func(k string, r Row) {
		if seen[k] {
			return
		}
		seen[k] = true
		r.Baseline, r.New = b[k].pct, n[k].pct
		r.BaseSamples, r.NewSamples = b[k].samples, n[k].samples
		r.BasePeriod, r.NewPeriod = b[k].period, n[k].period
		r.Delta = r.New - r.Baseline
		if !useDSO {
			r.DSO = ""
		}
		if r.Baseline < o.Min && r.New < o.Min {
			return
		}
		out = append(out, r)
	}
	for k, r := range brows {
		add(k, r)
	}
	for k, r := range nrows {
		add(k, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Baseline != out[j].Baseline {
			return out[i].Baseline > out[j].Baseline
		}
		if out[i].New != out[j].New {
			return out[i].New > out[j].New
		}
		return out[i].DSO+out[i].Sym < out[j].DSO+out[j].Sym
	})
	return out
}

// WriteText prints rows like perf diff.
func WriteText(w io.Writer, base, cur *model.Profile, rows []Row, o TextOptions) {
	fmt.Fprintf(w, "# Baseline: %s (%s, %d samples, %d lost)\n", strings.Join(base.Meta.Command, " "), base.Meta.Event, base.SampleCount(), base.Meta.Lost)
	fmt.Fprintf(w, "# New:      %s (%s, %d samples, %d lost)\n", strings.Join(cur.Meta.Command, " "), cur.Meta.Event, cur.SampleCount(), cur.Meta.Lost)
	titles, dots := "# Baseline     Delta", "# ........  ........"
	if o.Samples {
		titles += "  Base samples   New samples"
		dots += "  ............  ............"
	}
	if o.Period {
		titles += "       Base period        New period"
		dots += "  ................  ................"
	}
	fmt.Fprintf(w, "#\n%s  Shared Object        Symbol\n%s  ...................  ......\n#\n", titles, dots)
	for _, r := range rows {
		bs := "        "
		if r.Baseline > 0 {
			bs = fmt.Sprintf("%7.2f%%", r.Baseline)
		}
		ds := ""
		if math.Abs(r.Delta) >= 0.005 {
			ds = fmt.Sprintf("%+.2f%%", r.Delta)
		}
		mark := "[.]"
		if r.Kernel {
			mark = "[k]"
		}
		abs := ""
		if o.Samples {
			abs += fmt.Sprintf("  %12d  %12d", r.BaseSamples, r.NewSamples)
		}
		if o.Period {
			abs += fmt.Sprintf("  %16d  %16d", r.BasePeriod, r.NewPeriod)
		}
		fmt.Fprintf(w, "  %s  %8s%s  %-19s  %s %s\n", bs, ds, abs, r.DSO, mark, r.Sym)
	}
}

// WriteJSON prints rows as JSON.
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rows == nil {
		rows = []Row{}
	}
	return enc.Encode(rows)
}
