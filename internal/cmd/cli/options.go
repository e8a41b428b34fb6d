package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/collect/events"
	"github.com/sonde-dev/sonde/internal/collect/perf"
)

// CallGraph holds -g and --call-graph for commands that take stacks.
type CallGraph struct {
	g    bool
	mode string
}

// Add defines -g and --call-graph MODE (perf's spelling).
func (c *CallGraph) Add(fs *pflag.FlagSet) {
	fs.BoolVarP(&c.g, "callchain", "g", false, "record call chains (same as --call-graph auto)")
	fs.StringVar(&c.mode, "call-graph", "", "record call chains walked this way: auto (user stacks by sonde's BPF unwinder from "+
		".eh_frame tables, frame pointers where a mapping has none; dwarf is the same), fp (the kernel's frame-pointer walk), no")
}

// Mode says how stacks are wanted: "" none, "fp" or "auto" (-g, and
// perf's dwarf: sonde walks the DWARF call-frame tables in the kernel
// instead of copying stacks).
func (c CallGraph) Mode() (string, error) {
	switch c.mode {
	case "":
		if c.g {
			return "auto", nil
		}
		return "", nil
	case "fp", "auto":
		return c.mode, nil
	case "dwarf":
		return "auto", nil
	case "no", "none":
		return "", nil
	case "lbr":
		return "", Usagef("--call-graph lbr: needs a hardware PMU's last-branch records, which sonde does not read; use auto or fp")
	}
	return "", Usagef("--call-graph %q: want auto, fp, dwarf or no", c.mode)
}

// DefaultFreq is a prime near 1 kHz: a prime rate does not fall into
// lockstep with periodic work (timers, frames, ticks) the way 1000 Hz would.
const DefaultFreq = 997

// Sampling holds -F/--freq and -c/--count.
type Sampling struct {
	freq   string
	period uint64
}

// Add defines -F/--freq and -c/--count.
func (s *Sampling) Add(fs *pflag.FlagSet) {
	fs.StringVarP(&s.freq, "freq", "F", "", fmt.Sprintf("samples per second per CPU, or 'max' (default %d)", DefaultFreq))
	fs.Uint64VarP(&s.period, "count", "c", 0, "sample every COUNT events instead of by frequency")
	Conflicting(fs, "freq", "count", "sample by frequency or by count")
}

// Resolve returns a frequency in Hz or a period in events (the other 0).
func (s Sampling) Resolve() (freq, period uint64, err error) {
	switch {
	case s.period > 0 && s.freq != "":
		return 0, 0, Usagef("-F/--freq and -c/--count conflict: sample by frequency or by count")
	case s.period > 0:
		return 0, s.period, nil
	case s.freq == "max":
		m, err := perf.MaxSampleRate()
		return m, 0, err
	case s.freq == "":
		return DefaultFreq, 0, nil
	}
	f, err := strconv.ParseUint(s.freq, 10, 64)
	if err != nil || f == 0 {
		return 0, 0, Usagef("-F/--freq %s: want a positive number of Hz or 'max'", s.freq)
	}
	if m, err := perf.MaxSampleRate(); err == nil && f > m {
		return 0, 0, Usagef("-F/--freq %d is above kernel.perf_event_max_sample_rate (%d); use -F max or raise the sysctl", f, m)
	}
	return f, 0, nil
}

// Events holds -e/--event (repeatable, each a comma list) and --filter
// (for the tracepoints of the last -e).
type Events struct {
	names  []string
	filter string
}

// Add defines -e/--event and --filter; what says what they are for.
func (e *Events) Add(fs *pflag.FlagSet, what string) {
	fs.StringArrayVarP(&e.names, "event", "e", nil, what+": comma list, repeatable; sonde list shows them (cpu-clock, page-faults, sched:*, u:BIN:FUNC, …)")
	fs.StringVar(&e.filter, "filter", "", "kernel-side tracepoint filter for the tracepoints of the last -e (e.g. 'nr_sector > 8')")
}

// Resolve turns the names into event specs (def when none were given)
// and the filter into a map from spec index to filter.
func (e Events) Resolve(def []string) ([]events.Spec, map[int]string, error) {
	names := e.names
	if len(names) == 0 {
		names = def
	}
	if limit := perf.MaxFilterLen(); len(e.filter) > limit {
		// The kernel would refuse it with a bare EINVAL: say why first.
		return nil, nil, Usagef("--filter %s is longer than the kernel takes (%d bytes): use fewer clauses (a range, 'pid >= 100 && pid < 200', instead of a list)", perf.ShortFilter(e.filter), limit)
	}
	var specs []events.Spec
	filters := map[int]string{}
	for i, n := range names {
		ss, err := events.Resolve([]string{n})
		if err != nil {
			return nil, nil, Usagef("%v", err)
		}
		if e.filter != "" && i == len(names)-1 {
			for j, s := range ss {
				if !s.Tracepoint() {
					return nil, nil, Usagef("--filter applies to tracepoints, not %s", s)
				}
				filters[len(specs)+j] = e.filter
			}
		}
		specs = append(specs, ss...)
	}
	return specs, filters, nil
}

// Tracepoint resolves an event name that must be one tracepoint or probe.
func Tracepoint(name string) (events.Spec, error) {
	s, err := events.Resolve([]string{name})
	if err != nil {
		return events.Spec{}, Usagef("%v", err)
	}
	if len(s) != 1 || !s[0].Tracepoint() {
		return events.Spec{}, Usagef("%s: want one tracepoint or probe event", name)
	}
	return s[0], nil
}

// AddNoInterpFlag defines --no-interp: interpreter frames (CPython's
// functions, walked in BPF) are on by default for every process whose
// executable or libraries are an interpreter sonde knows.
func AddNoInterpFlag(fs *pflag.FlagSet, off *bool) {
	fs.BoolVar(off, "no-interp", false, "no interpreter frames: show CPython's own C frames, not the Python functions they run")
}
