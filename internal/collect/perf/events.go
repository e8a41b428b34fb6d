// Package perf is sonde's thin layer over perf_event_open(2): event names,
// attribute building, opening with errors a user can act on, the mmap ring
// buffer and the binary records the kernel writes into it.
package perf

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Kind tells software, hardware and cache events apart; the listing and the
// error messages depend on it.
type Kind int

const (
	KindSoftware Kind = iota
	KindHardware
	KindHWCache
	KindTracepoint
)

func (k Kind) String() string {
	switch k {
	case KindHardware:
		return "hardware"
	case KindHWCache:
		return "hardware-cache"
	case KindTracepoint:
		return "tracepoint"
	}
	return "software"
}

// EventDef is one named generic event.
type EventDef struct {
	Name    string
	Aliases []string
	Kind    Kind
	Type    uint32
	Config  uint64
}

// Builtin lists the generic events perf knows by name.
var Builtin = []EventDef{
	sw("cpu-clock", unix.PERF_COUNT_SW_CPU_CLOCK),
	sw("task-clock", unix.PERF_COUNT_SW_TASK_CLOCK),
	sw("page-faults", unix.PERF_COUNT_SW_PAGE_FAULTS, "faults"),
	sw("minor-faults", unix.PERF_COUNT_SW_PAGE_FAULTS_MIN),
	sw("major-faults", unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ),
	sw("context-switches", unix.PERF_COUNT_SW_CONTEXT_SWITCHES, "cs"),
	sw("cpu-migrations", unix.PERF_COUNT_SW_CPU_MIGRATIONS, "migrations"),
	sw("alignment-faults", unix.PERF_COUNT_SW_ALIGNMENT_FAULTS),
	sw("emulation-faults", unix.PERF_COUNT_SW_EMULATION_FAULTS),
	sw("dummy", unix.PERF_COUNT_SW_DUMMY),

	hw("cycles", unix.PERF_COUNT_HW_CPU_CYCLES, "cpu-cycles"),
	hw("instructions", unix.PERF_COUNT_HW_INSTRUCTIONS),
	hw("cache-references", unix.PERF_COUNT_HW_CACHE_REFERENCES),
	hw("cache-misses", unix.PERF_COUNT_HW_CACHE_MISSES),
	hw("branch-instructions", unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches"),
	hw("branch-misses", unix.PERF_COUNT_HW_BRANCH_MISSES),
	hw("bus-cycles", unix.PERF_COUNT_HW_BUS_CYCLES),
	hw("stalled-cycles-frontend", unix.PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, "idle-cycles-frontend"),
	hw("stalled-cycles-backend", unix.PERF_COUNT_HW_STALLED_CYCLES_BACKEND, "idle-cycles-backend"),
	hw("ref-cycles", unix.PERF_COUNT_HW_REF_CPU_CYCLES),

	cacheEvent("L1-dcache-loads", unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS),
	cacheEvent("L1-dcache-load-misses", unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
	cacheEvent("L1-dcache-stores", unix.PERF_COUNT_HW_CACHE_L1D, unix.PERF_COUNT_HW_CACHE_OP_WRITE, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS),
	cacheEvent("L1-icache-load-misses", unix.PERF_COUNT_HW_CACHE_L1I, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
	cacheEvent("LLC-loads", unix.PERF_COUNT_HW_CACHE_LL, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS),
	cacheEvent("LLC-load-misses", unix.PERF_COUNT_HW_CACHE_LL, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
	cacheEvent("dTLB-loads", unix.PERF_COUNT_HW_CACHE_DTLB, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS),
	cacheEvent("dTLB-load-misses", unix.PERF_COUNT_HW_CACHE_DTLB, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
	cacheEvent("iTLB-load-misses", unix.PERF_COUNT_HW_CACHE_ITLB, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
	cacheEvent("branch-loads", unix.PERF_COUNT_HW_CACHE_BPU, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_ACCESS),
	cacheEvent("branch-load-misses", unix.PERF_COUNT_HW_CACHE_BPU, unix.PERF_COUNT_HW_CACHE_OP_READ, unix.PERF_COUNT_HW_CACHE_RESULT_MISS),
}

// sw and hw declare a generic software or hardware event.
func sw(name string, config uint64, aliases ...string) EventDef {
	return EventDef{Name: name, Aliases: aliases, Kind: KindSoftware, Type: unix.PERF_TYPE_SOFTWARE, Config: config}
}

func hw(name string, config uint64, aliases ...string) EventDef {
	return EventDef{Name: name, Aliases: aliases, Kind: KindHardware, Type: unix.PERF_TYPE_HARDWARE, Config: config}
}

func cacheEvent(name string, cache, op, result uint64) EventDef {
	return EventDef{Name: name, Kind: KindHWCache, Type: unix.PERF_TYPE_HW_CACHE, Config: cache | op<<8 | result<<16}
}

// Event is a parsed event specification such as "cpu-clock:u".
type Event struct {
	Def           EventDef
	ExcludeUser   bool
	ExcludeKernel bool
	Modifiers     string
}

// String gives the event as the user would write it.
func (e Event) String() string {
	if e.Modifiers == "" {
		return e.Def.Name
	}
	return e.Def.Name + ":" + e.Modifiers
}

// ParseEvent resolves a name with optional :u/:k modifiers. Unknown names get
// an error that suggests the nearest known ones.
func ParseEvent(spec string) (Event, error) {
	name, mods, _ := strings.Cut(spec, ":")
	name = strings.TrimSpace(name)
	var ev Event
	found := false
	for _, d := range Builtin {
		if strings.EqualFold(d.Name, name) {
			ev.Def, found = d, true
			break
		}
		for _, a := range d.Aliases {
			if strings.EqualFold(a, name) {
				ev.Def, found = d, true
			}
		}
		if found {
			break
		}
	}
	if !found {
		return ev, fmt.Errorf("unknown event %q (nearest: %s)", spec, strings.Join(Nearest(name, 3), ", "))
	}
	if mods != "" {
		var u, k bool
		for _, c := range mods {
			switch c {
			case 'u':
				u = true
			case 'k':
				k = true
			case 'p', 'P', 'H', 'G':
				// precise-ip and host/guest modifiers are accepted and ignored:
				// software events are exact anyway.
			default:
				return ev, fmt.Errorf("unknown modifier %q in event %q (valid: u, k)", string(c), spec)
			}
		}
		if u && !k {
			ev.ExcludeKernel = true
		}
		if k && !u {
			ev.ExcludeUser = true
		}
		ev.Modifiers = mods
	}
	return ev, nil
}

// Names returns every event name and alias.
func Names() []string {
	var out []string
	for _, d := range Builtin {
		out = append(out, d.Name)
		out = append(out, d.Aliases...)
	}
	return out
}

// Nearest returns up to n known event names closest to name by edit distance.
func Nearest(name string, n int) []string {
	return NearestOf(name, Names(), n)
}

// NearestOf ranks candidates by edit distance to name (prefix matches first).
func NearestOf(name string, candidates []string, n int) []string {
	type scored struct {
		s string
		d int
	}
	var all []scored
	low := strings.ToLower(name)
	for _, c := range candidates {
		d := levenshtein(low, strings.ToLower(c))
		if low != "" && strings.Contains(strings.ToLower(c), low) {
			d = 0
		}
		all = append(all, scored{c, d})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].s)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MaxSampleRate reads kernel.perf_event_max_sample_rate, the ceiling for -F.
func MaxSampleRate() (uint64, error) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		return 0, fmt.Errorf("reading perf_event_max_sample_rate: %w", err)
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
