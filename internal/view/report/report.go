// Package report aggregates a profile into perf-report-style entries
// (overhead per comm/dso/symbol/… with self and children time) and call-graph
// trees, and writes them as text or JSON.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
)

// Keys sonde can sort (group) by.
var Keys = []string{"comm", "pid", "tid", "dso", "sym", "cpu", "srcline", "cgroup"}

// Options control aggregation and output.
type Options struct {
	Sort         []string // default comm,dso,sym
	Children     bool     // accumulate callees' time into callers
	Graph        string   // "caller", "callee" or "none"
	GraphMin     float64  // hide call-graph branches below this percent
	PercentLimit float64  // hide entries below this percent
	// Tasks keeps the samples of these commands, processes and threads.
	Tasks      model.Tasks
	DSOs, Syms []string
	OnlyEvent  int // 1 + index into Meta.Events to report one event; 0 for all
}

// Entry is one row.
type Entry struct {
	Keys     map[string]string `json:"keys"`
	Self     uint64            `json:"self_period"`
	Children uint64            `json:"children_period"`
	Samples  int               `json:"samples"`
	SelfPct  float64           `json:"self_percent"`
	ChildPct float64           `json:"children_percent"`
	Kernel   bool              `json:"kernel"`
	Graph    *Node             `json:"callgraph,omitempty"`
	key      string
}

// Node is a call-graph tree node.
type Node struct {
	Name     string  `json:"name"`
	Period   uint64  `json:"period"`
	Percent  float64 `json:"percent"`
	Children []*Node `json:"children,omitempty"`
	index    map[string]*Node
}

// Report is the aggregated result.
type Report struct {
	Meta        model.Meta `json:"-"`
	Recording   Recording  `json:"recording"`
	Samples     int        `json:"samples"`
	TotalPeriod uint64     `json:"total_period"`
	Sort        []string   `json:"sort"`
	Children    bool       `json:"with_children"`
	Entries     []*Entry   `json:"entries"`
	opts        Options
}

// Recording is the data file's header in the JSON vocabulary
// (docs/json.md).
type Recording struct {
	Event       string   `json:"event"`
	FreqHz      uint64   `json:"freq_hz,omitempty"`
	Period      uint64   `json:"period,omitempty"`
	Callchain   bool     `json:"callchain"`
	Target      string   `json:"target,omitempty"`
	Argv        []string `json:"argv,omitempty"`
	Hostname    string   `json:"hostname,omitempty"`
	Release     string   `json:"kernel_release,omitempty"`
	Arch        string   `json:"arch,omitempty"`
	StartUnixNS int64    `json:"start_unix_ns"`
	DurationNS  uint64   `json:"duration_ns"`
	Lost        uint64   `json:"lost"`
	Throttled   uint64   `json:"throttled"`
	Version     string   `json:"sonde_version,omitempty"`
	ExitCode    int      `json:"exit_code"`
	Unwinder    string   `json:"unwinder,omitempty"`
	Unit        string   `json:"unit,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// UserStacks: how complete the walked user stacks are (unwinder only).
	UserStacks *stackstat.Completeness `json:"user_stacks,omitempty"`
}

// RecordingOf is a recording's header in the JSON vocabulary.
func RecordingOf(m model.Meta) Recording {
	return Recording{Event: m.Event, FreqHz: m.Freq, Period: m.Period, Callchain: m.Callchain, Target: m.Target,
		Argv: m.Command, Hostname: m.Hostname, Release: m.Kernel, Arch: m.Arch, StartUnixNS: m.StartUnixNS,
		DurationNS: m.DurationNS, Lost: m.Lost, Throttled: m.Throttled, Version: m.SondeVersion,
		ExitCode: m.ExitCode, Unwinder: m.Unwinder, Unit: m.Unit, Warnings: m.Warnings, UserStacks: m.UserStacks}
}

// ParseSort validates a --sort list of built-in keys; tracepoint field
// names are accepted too and checked against the recording later.
func ParseSort(s string) ([]string, error) { return parseSort(s, true) }

func parseSort(s string, allowFields bool) ([]string, error) {
	if s == "" {
		return []string{"comm", "dso", "sym"}, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		ok := false
		for _, v := range Keys {
			if k == v {
				ok = true
			}
		}
		if k == "symbol" {
			k, ok = "sym", true
		}
		if !ok && (!allowFields || !validFieldName(k)) {
			return nil, fmt.Errorf("unknown sort key %q (valid: %s, or a tracepoint field)", k, strings.Join(Keys, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// FieldKeys returns the sort keys that are not built in: tracepoint fields.
func FieldKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !contains(Keys, k) {
			out = append(out, k)
		}
	}
	return out
}

// CheckFieldKeys fails for field keys no recorded event has.
func CheckFieldKeys(p *model.Profile, keys []string) error {
	var have []string
	for _, k := range FieldKeys(keys) {
		found := false
		for _, ev := range p.Meta.Events {
			for _, f := range ev.Fields {
				if f.Name == k {
					found = true
				}
				if !strings.HasPrefix(f.Name, "common_") && !contains(have, f.Name) {
					have = append(have, f.Name)
				}
			}
		}
		if !found {
			if len(have) == 0 {
				return fmt.Errorf("unknown sort key %q (valid: %s; this recording has no tracepoint fields)", k, strings.Join(Keys, ", "))
			}
			return fmt.Errorf("unknown sort key %q (valid: %s, or a field: %s)", k, strings.Join(Keys, ", "), strings.Join(have, ", "))
		}
	}
	return nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Build aggregates p.
func Build(p *model.Profile, o Options) *Report {
	if len(o.Sort) == 0 {
		o.Sort = []string{"comm", "dso", "sym"}
	}
	if !p.Meta.Callchain {
		o.Children = false
		o.Graph = "none"
	}
	r := &Report{Meta: p.Meta, Sort: o.Sort, Children: o.Children, opts: o}
	if o.OnlyEvent > 0 && o.OnlyEvent <= len(p.Meta.Events) {
		ev := p.Meta.Events[o.OnlyEvent-1]
		r.Meta.Event, r.Meta.Freq, r.Meta.Period = ev.Name, ev.Freq, ev.Period
	}
	a := newAggregator(p, o)
	// Work per (thread, stack, CPU) group, not per sample: a million samples
	// usually fall into a few thousand groups.
	groups := p.SampleGroups()
	for i := range groups {
		s := &groups[i]
		if !a.selected(s) {
			continue
		}
		r.Samples += int(s.Count)
		r.TotalPeriod += s.Period
		a.add(s)
	}
	r.Entries = a.entryList(r.TotalPeriod)
	r.Recording = RecordingOf(r.Meta)
	return r
}

// aggregator sums sample groups into entries keyed by the sort keys.
type aggregator struct {
	p          *model.Profile
	o          Options
	frameKeyed bool // a sort key depends on the frame (sym, dso, srcline)
	useThread  bool // a sort key depends on the thread (comm, pid, tid)
	useCPU     bool
	fieldIdx   map[string]int // sort key → index into a sample's extra fields
	entries    map[string]*Entry
	fast       map[fastKey]*Entry
	seen       map[*Entry]bool // entries a sample already counted in (recursion)
	sb         strings.Builder
}

// fastKey holds the few fields of a sample the sort keys depend on. Most
// samples map to entries already seen: looking them up by these saves
// building the string key.
type fastKey struct {
	thread int32
	cpu    uint32
	loc    int32
	extra  string
}

func newAggregator(p *model.Profile, o Options) *aggregator {
	a := &aggregator{p: p, o: o, fieldIdx: map[string]int{}, entries: map[string]*Entry{}, fast: map[fastKey]*Entry{}}
	a.frameKeyed = contains(o.Sort, "sym") || contains(o.Sort, "dso") || contains(o.Sort, "srcline")
	for i, k := range FieldKeys(o.Sort) {
		a.fieldIdx[k] = i
	}
	a.useThread = contains(o.Sort, "comm") || contains(o.Sort, "pid") || contains(o.Sort, "tid") || contains(o.Sort, "cgroup")
	a.useCPU = contains(o.Sort, "cpu")
	return a
}

// selected says whether s passes the event, comm, pid and tid filters.
func (a *aggregator) selected(s *model.SampleGroup) bool {
	o := &a.o
	if o.OnlyEvent > 0 && int(s.Event) != o.OnlyEvent-1 {
		return false
	}
	return o.Tasks.Keep(a.p.Threads[s.Thread])
}

// add counts s: self time in the entry of its leaf frame, children time in
// the entry of every frame of its stack (only the leaf's when no sort key
// depends on the frame).
func (a *aggregator) add(s *model.SampleGroup) {
	stack := a.p.Stacks[s.Stack]
	leaf := int32(-1)
	if len(stack) > 0 {
		leaf = stack[0]
	}
	if leaf < 0 {
		return
	}
	if a.filterOK(leaf) {
		e := a.get(s, leaf)
		e.Self += s.Period
		e.Samples += int(s.Count)
		if !a.o.Children {
			a.addChildren(e, stack, s.Period)
		}
	}
	if a.o.Children && a.frameKeyed {
		if a.seen == nil {
			a.seen = map[*Entry]bool{}
		}
		clear(a.seen)
		for _, loc := range stack {
			if !a.filterOK(loc) {
				continue
			}
			e := a.get(s, loc)
			if a.seen[e] {
				continue // recursion: count a sample once per entry
			}
			a.seen[e] = true
			a.addChildren(e, stack, s.Period)
		}
	} else if a.o.Children && a.filterOK(leaf) {
		a.addChildren(a.get(s, leaf), stack, s.Period)
	}
}

// addChildren adds period to e's children time and stack to its call graph.
func (a *aggregator) addChildren(e *Entry, stack []int32, period uint64) {
	e.Children += period
	if a.o.Graph != "none" {
		addChain(a.p, e, stack, period, a.o.Graph)
	}
}

// filterOK says whether the frame loc passes the dso and sym filters.
func (a *aggregator) filterOK(loc int32) bool {
	if len(a.o.DSOs) > 0 && !contains(a.o.DSOs, a.p.DSOName(loc)) {
		return false
	}
	if len(a.o.Syms) > 0 && !contains(a.o.Syms, a.p.FrameName(loc)) {
		return false
	}
	return true
}

// get returns the entry of s at frame loc, creating it on first use.
func (a *aggregator) get(s *model.SampleGroup, loc int32) *Entry {
	var fk fastKey
	if a.frameKeyed {
		fk.loc = loc
	}
	if a.useThread {
		fk.thread = s.Thread
	}
	if a.useCPU {
		fk.cpu = s.CPU
	}
	fk.extra = s.Extra
	if e := a.fast[fk]; e != nil {
		return e
	}
	k, vals, kernel := a.keyOf(s, loc)
	e := a.entries[k]
	if e == nil {
		e = &Entry{Keys: vals, Kernel: kernel, key: k}
		a.entries[k] = e
	}
	a.fast[fk] = e
	return e
}

// keyOf returns the entry key of s at frame loc (the sort keys' values, each
// ended by a NUL), those values by key, and whether the frame is the kernel's.
func (a *aggregator) keyOf(s *model.SampleGroup, loc int32) (string, map[string]string, bool) {
	p, t := a.p, a.p.Threads[s.Thread]
	a.sb.Reset()
	vals := map[string]string{}
	kernel := false
	for _, k := range a.o.Sort {
		var v string
		switch k {
		case "comm":
			v = t.Comm
		case "pid":
			v = fmt.Sprintf("%d:%s", t.Pid, t.Comm)
		case "tid":
			v = fmt.Sprintf("%d:%s", t.Tid, t.Comm)
		case "cgroup":
			v = t.Cgroup
			if v == "" {
				v = "[unknown]"
			}
		case "cpu":
			v = strconv.Itoa(int(s.CPU))
		case "dso":
			v = p.DSOName(loc)
		case "sym":
			v = p.FrameName(loc)
			kernel = p.Kind(loc).IsKernel()
		case "srcline":
			v = p.SrcLine(loc)
		default:
			v = fieldValue(s.Extra, a.fieldIdx[k])
		}
		vals[k] = v
		a.sb.WriteString(v)
		a.sb.WriteByte(0)
	}
	if !contains(a.o.Sort, "sym") && loc >= 0 {
		kernel = p.Kind(loc).IsKernel()
	}
	return a.sb.String(), vals, kernel
}

// entryList returns the entries at or above the percent limit, with their
// percentages and finished call graphs, largest first.
func (a *aggregator) entryList(total uint64) []*Entry {
	o := &a.o
	var list []*Entry
	for _, e := range a.entries {
		if total > 0 {
			e.SelfPct = 100 * float64(e.Self) / float64(total)
			e.ChildPct = 100 * float64(e.Children) / float64(total)
		}
		pct := e.SelfPct
		if o.Children {
			pct = e.ChildPct
		}
		if pct < o.PercentLimit {
			continue
		}
		if e.Graph != nil {
			finishGraph(e.Graph, total, o.GraphMin)
		}
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool {
		x, y := list[i], list[j]
		if o.Children && x.Children != y.Children {
			return x.Children > y.Children
		}
		if x.Self != y.Self {
			return x.Self > y.Self
		}
		return x.key < y.key
	})
	return list
}

// addChain adds one sample's chain to e's tree: root→leaf for caller
// order, leaf→root for callee order.
func addChain(p *model.Profile, e *Entry, stack []int32, period uint64, order string) {
	if e.Graph == nil {
		e.Graph = &Node{}
	}
	n := e.Graph
	n.Period += period
	step := func(loc int32) {
		name := p.FrameName(loc)
		if n.index == nil {
			n.index = map[string]*Node{}
		}
		c := n.index[name]
		if c == nil {
			c = &Node{Name: name}
			n.index[name] = c
			n.Children = append(n.Children, c)
		}
		c.Period += period
		n = c
	}
	if order == "callee" {
		for _, loc := range stack {
			step(loc)
		}
	} else {
		for i := len(stack) - 1; i >= 0; i-- {
			step(stack[i])
		}
	}
}

func finishGraph(n *Node, total uint64, min float64) {
	if total > 0 {
		n.Percent = 100 * float64(n.Period) / float64(total)
	}
	kept := n.Children[:0]
	for _, c := range n.Children {
		if total > 0 && 100*float64(c.Period)/float64(total) < min {
			continue
		}
		kept = append(kept, c)
	}
	n.Children = kept
	sort.Slice(n.Children, func(i, j int) bool {
		if n.Children[i].Period != n.Children[j].Period {
			return n.Children[i].Period > n.Children[j].Period
		}
		return n.Children[i].Name < n.Children[j].Name
	})
	n.index = nil
	for _, c := range n.Children {
		finishGraph(c, total, min)
	}
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func header(w io.Writer, m model.Meta, samples int, total uint64) {
	rate := ""
	if m.Freq > 0 {
		rate = fmt.Sprintf(" (%d Hz)", m.Freq)
	} else if m.Period > 0 {
		rate = fmt.Sprintf(" (period %d)", m.Period)
	}
	fmt.Fprintf(w, "# Event: %s%s\n", m.Event, rate)
	fmt.Fprintf(w, "# Samples: %d  Lost samples: %d", samples, m.Lost)
	if m.Throttled > 0 {
		fmt.Fprintf(w, "  Throttled: %d", m.Throttled)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "# Event count: %d\n", total)
	fmt.Fprintf(w, "# Duration: %s\n", time.Duration(m.DurationNS).Round(time.Millisecond))
	if len(m.Command) > 0 {
		fmt.Fprintf(w, "# Command: %s (exit %d)\n", strings.Join(m.Command, " "), m.ExitCode)
	}
	fmt.Fprintf(w, "# Target: %s  Host: %s  Kernel: %s  Arch: %s  Call graph: %v\n", m.Target, m.Hostname, m.Kernel, m.Arch, callgraphName(m))
	for _, warn := range m.Warnings {
		fmt.Fprintf(w, "# Warning: %s\n", warn)
	}
	if m.UserStacks != nil {
		fmt.Fprintf(w, "# user %s\n", m.UserStacks)
	}
	fmt.Fprintln(w, "#")
}

func callgraphName(m model.Meta) string {
	if !m.Callchain {
		return "no"
	}
	return m.Unwinder
}

var columnTitle = map[string]string{
	"comm": "Command", "pid": "Pid:Command", "tid": "Tid:Command", "dso": "Shared Object",
	"sym": "Symbol", "cpu": "CPU", "srcline": "Source:Line", "cgroup": "Cgroup",
}

// WriteText writes the perf-style report.
func (r *Report) WriteText(w io.Writer) error {
	header(w, r.Meta, r.Samples, r.TotalPeriod)
	widths := make([]int, len(r.Sort))
	cell := func(e *Entry, k string) string {
		v := e.Keys[k]
		if k == "sym" {
			mark := "[.] "
			if e.Kernel {
				mark = "[k] "
			}
			v = mark + v
		}
		return v
	}
	title := func(k string) string {
		if t, ok := columnTitle[k]; ok {
			return t
		}
		return k
	}
	for i, k := range r.Sort {
		widths[i] = len(title(k))
		for _, e := range r.Entries {
			if k == "sym" {
				continue // last column in practice: no padding needed
			}
			widths[i] = max(widths[i], len(cell(e, k)))
		}
	}
	var titles, dots strings.Builder
	if r.Children {
		titles.WriteString("# Children      Self")
		dots.WriteString("# ........  ........")
	} else {
		titles.WriteString("# Overhead")
		dots.WriteString("# ........")
	}
	for i, k := range r.Sort {
		fmt.Fprintf(&titles, "  %-*s", widths[i], title(k))
		fmt.Fprintf(&dots, "  %s", strings.Repeat(".", widths[i]))
	}
	fmt.Fprintln(w, strings.TrimRight(titles.String(), " "))
	fmt.Fprintln(w, strings.TrimRight(dots.String(), " "))
	fmt.Fprintln(w, "#")
	for _, e := range r.Entries {
		var line strings.Builder
		if r.Children {
			fmt.Fprintf(&line, "  %7.2f%%  %7.2f%%", e.ChildPct, e.SelfPct)
		} else {
			fmt.Fprintf(&line, "  %7.2f%%", e.SelfPct)
		}
		for i, k := range r.Sort {
			fmt.Fprintf(&line, "  %-*s", widths[i], cell(e, k))
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
		if e.Graph != nil && len(e.Graph.Children) > 0 {
			writeGraph(w, e.Graph)
			fmt.Fprintln(w)
		}
	}
	if len(r.Entries) == 0 {
		fmt.Fprintln(w, "# (no samples)")
	}
	return nil
}

const graphIndent = "            "

func writeGraph(w io.Writer, root *Node) {
	fmt.Fprintf(w, "%s|\n", graphIndent)
	if len(root.Children) == 1 {
		c := root.Children[0]
		fmt.Fprintf(w, "%s---%s\n", graphIndent, c.Name)
		writeBranch(w, graphIndent+"   ", c)
		return
	}
	fmt.Fprintf(w, "%s---\n", graphIndent)
	writeBranch(w, graphIndent+"   ", root)
}

// writeBranch prints n's children below it: a straight line while there is
// one child carrying all of n's weight, a fork with percentages otherwise.
func writeBranch(w io.Writer, prefix string, n *Node) {
	for len(n.Children) == 1 && n.Children[0].Period == n.Period {
		n = n.Children[0]
		fmt.Fprintf(w, "%s%s\n", prefix, n.Name)
	}
	if len(n.Children) == 0 {
		return
	}
	for i, c := range n.Children {
		last := i == len(n.Children)-1
		pct := fmt.Sprintf("%.2f%%", c.Percent)
		fmt.Fprintf(w, "%s|\n", prefix)
		if last {
			fmt.Fprintf(w, "%s --%s--%s\n", prefix, pct, c.Name)
			writeBranch(w, prefix+strings.Repeat(" ", len(pct)+5), c)
		} else {
			fmt.Fprintf(w, "%s|--%s--%s\n", prefix, pct, c.Name)
			writeBranch(w, prefix+"|"+strings.Repeat(" ", len(pct)+4), c)
		}
	}
}

// fieldValue picks the i-th NUL-separated value of a group's Extra key.
func fieldValue(extra string, i int) string {
	for ; i > 0; i-- {
		j := strings.IndexByte(extra, 0)
		if j < 0 {
			return ""
		}
		extra = extra[j+1:]
	}
	if j := strings.IndexByte(extra, 0); j >= 0 {
		return extra[:j]
	}
	return extra
}
