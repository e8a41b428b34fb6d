// Package load opens what a view's -i names, whoever wrote it: a sonde
// data file, perf.data (file or pipe format), or perf script text. The kind
// is told from the first bytes, never from the file name, so every view
// (report, flamegraph, diff, annotate, script, latency -i) reads all three
// the same way and a perf recording can be compared with a sonde one.
//
// "-" names standard input, as perf report -i - does
// (perf record -o - | sonde report -i -).
package load

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/format/perfdata"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/tools/latency"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// Kind is what a file holds.
type Kind int

const (
	KindOther      Kind = iota // neither sonde's nor perf's: collapsed stacks, or not a profile
	KindSonde                  // a sonde data file
	KindPerfData               // perf.data, file or pipe format
	KindPerfScript             // perf script text
)

func (k Kind) String() string {
	return [...]string{"other", "sonde data file", "perf.data", "perf script text"}[k]
}

// Options say what the caller needs of the profile.
type Options struct {
	// Group keeps samples only as (thread, stack, CPU, event) groups, for
	// the views that aggregate (datafile.ReadOptions.Group).
	Group bool
	// Extra computes a sample's extra group key from tracepoint fields.
	Extra func(m *model.Meta, s *model.Sample) string
	// Perf says where perf.data's objects are looked for (build-id cache,
	// --symfs root, kallsyms).
	Perf perfdata.Options
	// Warn hears, one line each, what an import could not do: the objects
	// whose frames stay unnamed. nil prints "sonde: warning: PATH: …" on
	// standard error.
	Warn func(string)
}

func (o *Options) warn(path string) func(string) {
	if o.Warn != nil {
		return o.Warn
	}
	return StderrWarn(path)
}

// StderrWarn prints warnings about path on standard error, one line each.
func StderrWarn(path string) func(string) {
	return func(w string) { fmt.Fprintf(os.Stderr, "sonde: warning: %s: %s\n", path, w) }
}

// file is an opened input with its first bytes known.
type file struct {
	path string
	r    io.Reader // positioned at the start
	head []byte
	kind Kind
	c    io.Closer
}

func (f *file) Close() error {
	if f.c != nil {
		return f.c.Close()
	}
	return nil
}

// open opens path ("-" for standard input) and tells its kind. A regular
// file is handed on as itself so perf.data's sections are read in place;
// pipes go through a buffer that keeps the sniffed bytes.
func open(path string) (*file, error) {
	var of *os.File
	if path == "-" {
		of = os.Stdin
	} else {
		var err error
		if of, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("opening input: %w", err)
		}
	}
	f := &file{path: path}
	if of != os.Stdin {
		f.c = of
	}
	if st, err := of.Stat(); err == nil && st.Mode().IsRegular() {
		head := make([]byte, perfdata.SniffLen)
		n, err := of.ReadAt(head, 0)
		if err != nil && err != io.EOF {
			f.Close()
			return nil, fmt.Errorf("%s: reading: %w", path, err)
		}
		f.head, f.r = head[:n], of
	} else {
		br := bufio.NewReaderSize(of, 1<<20)
		head, err := br.Peek(perfdata.SniffLen)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			f.Close()
			return nil, fmt.Errorf("%s: reading: %w", path, err)
		}
		f.head, f.r = head, br
	}
	f.kind = sniff(f.head)
	return f, nil
}

func sniff(head []byte) Kind {
	if bytes.HasPrefix(head, []byte(datafile.Magic)) {
		return KindSonde
	}
	switch perfdata.Sniff(head) {
	case perfdata.FormatData:
		return KindPerfData
	case perfdata.FormatScript:
		return KindPerfScript
	}
	return KindOther
}

// Detect tells what path holds from its first bytes.
func Detect(path string) (Kind, error) {
	if path == "-" {
		return KindOther, fmt.Errorf("standard input can be read only once: open it, do not detect it")
	}
	f, err := open(path)
	if err != nil {
		return KindOther, err
	}
	defer f.Close()
	return f.kind, nil
}

// Profile reads a profile from path: a sonde data file, perf.data or perf
// script text. Errors are one line naming the file.
func Profile(path string, o Options) (*model.Profile, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, _, err := f.profile(o)
	return p, err
}

// Import is Profile for perf's formats, with what the import learned; a sonde
// data file is refused (there is nothing to import).
func Import(path string, o Options) (*model.Profile, *perfdata.Result, Kind, error) {
	f, err := open(path)
	if err != nil {
		return nil, nil, KindOther, err
	}
	defer f.Close()
	if f.kind == KindSonde {
		return nil, nil, f.kind, fmt.Errorf("%s is already a sonde data file", path)
	}
	p, res, err := f.profile(o)
	return p, res, f.kind, err
}

func (f *file) profile(o Options) (*model.Profile, *perfdata.Result, error) {
	switch f.kind {
	case KindSonde:
		p, err := datafile.ReadWith(bufio.NewReaderSize(f.r, 1<<20), datafile.ReadOptions{Group: o.Group, Extra: o.Extra})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.path, err)
		}
		return p, nil, nil
	case KindPerfData:
		p, res, err := perfdata.Convert(f.r, o.Perf)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.path, err)
		}
		warnUnmatched(res.Unmatched, o.warn(f.path))
		group(p, o)
		return p, res, nil
	case KindPerfScript:
		p, err := perfdata.ScriptProfile(f.r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: reading perf script text: %w", f.path, err)
		}
		group(p, o)
		return p, &perfdata.Result{}, nil
	}
	return nil, nil, fmt.Errorf("%s: not a sonde data file, perf.data or perf script text", f.path)
}

// warnUnmatched says which objects an import could not name, one line
// each, numbered, with the samples they touch.
func warnUnmatched(u []perfdata.Unmatched, warn func(string)) {
	for i, x := range u {
		id := ""
		if x.BuildID != "" {
			id = " (build-id " + x.BuildID + ")"
		}
		warn(fmt.Sprintf("unmatched object %d/%d: %s%s, %d samples: %s", i+1, len(u), x.Name, id, x.Samples, x.Reason))
	}
}

// group turns the samples of an imported profile into groups, as the data
// file reader does for the views that only aggregate.
func group(p *model.Profile, o Options) {
	if !o.Group {
		return
	}
	var g model.Grouper
	if o.Extra != nil {
		g.Extra = func(s *model.Sample) string { return o.Extra(&p.Meta, s) }
	}
	for _, s := range p.Samples {
		g.Add(s)
	}
	p.Groups = g.Groups
	if p.Groups == nil {
		p.Groups = []model.SampleGroup{}
	}
	p.Samples = nil
}

// Flame reads path into a flame graph tree with a subtitle saying what was
// recorded. Besides profiles it takes collapsed stacks; perf script text
// is folded as inferno-collapse-perf --all folds it (process names, _[k]
// kernel and _[j] JIT frames, weighted by period), so sonde's folded
// output of perf's text is the one FlameGraph users know. warn hears about
// skipped folded lines and unmatched objects.
func Flame(path string, warn func(string)) (*flamegraph.Node, string, error) {
	if warn == nil {
		warn = StderrWarn(path)
	}
	f, err := open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	switch f.kind {
	case KindSonde, KindPerfData:
		p, _, err := f.profile(Options{Group: true, Warn: warn})
		if err != nil {
			return nil, "", err
		}
		return flamegraph.FromProfile(p), Subtitle(p), nil
	case KindPerfScript:
		folded, err := perfdata.FoldScript(f.r, perfdata.FoldOptions{Kernel: true, JIT: true})
		if err != nil {
			return nil, "", fmt.Errorf("%s: folding perf script text: %w", path, err)
		}
		var buf bytes.Buffer
		if err := perfdata.WriteFolded(&buf, folded); err != nil {
			return nil, "", err
		}
		root, err := flamegraph.ParseFolded(&buf, warn)
		if err != nil {
			return nil, "", fmt.Errorf("%s: folding perf script text: %w", path, err)
		}
		return root, "perf script text", nil
	}
	root, err := flamegraph.ParseFolded(f.r, warn)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a sonde data file, perf.data, perf script text or collapsed stacks: %w", path, err)
	}
	return root, "", nil
}

// Subtitle says what a profile recorded, for the line under a graph's
// title.
func Subtitle(p *model.Profile) string {
	sub := fmt.Sprintf("%s, %d samples (%d lost), %s", p.Meta.Event, p.SampleCount(), p.Meta.Lost, time.Duration(p.Meta.DurationNS).Round(time.Millisecond))
	if len(p.Meta.Command) > 0 {
		sub += ": " + strings.Join(p.Meta.Command, " ")
	}
	return sub
}

// SameEvents reports whether two profiles' event lists name the same
// events, ignoring the modifiers perf appends to the events it chooses
// itself (perf record's default is cpu-clock:pppH, sonde's cpu-clock).
func SameEvents(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if withoutModifiers(as[i]) != withoutModifiers(bs[i]) {
			return false
		}
	}
	return true
}

// withoutModifiers cuts a trailing ":MODS" made only of perf's event
// modifier letters; tracepoints (sched:sched_switch) keep their name.
func withoutModifiers(ev string) string {
	i := strings.LastIndexByte(ev, ':')
	if i < 0 || i == len(ev)-1 {
		return ev
	}
	for _, c := range ev[i+1:] {
		if !strings.ContainsRune("ukhIGHpPSDWeb", c) {
			return ev
		}
	}
	return ev[:i]
}

// FlameDiff loads BASE and NEW for a differential flame graph: NEW's tree,
// each frame's change in share from BASE, and a subtitle naming both.
func FlameDiff(base, cur string) (*flamegraph.Node, *flamegraph.Diff, string, error) {
	b, _, err := Flame(base, nil)
	if err != nil {
		return nil, nil, "", err
	}
	root, sub, err := Flame(cur, nil)
	if err != nil {
		return nil, nil, "", err
	}
	return root, flamegraph.DiffTree(b, root), "change from " + base + " to " + cur + " (" + sub + ")", nil
}

// ForLatency pairs a recording's samples as o says (latency -i); a pairing
// the recording cannot give (no such event or field) is a usage error.
func ForLatency(path string, o latency.Options) (*latency.Result, model.Meta, error) {
	p, err := Profile(path, Options{})
	if err != nil {
		return nil, model.Meta{}, err
	}
	r, err := latency.Compute(p, o)
	if err != nil {
		return nil, model.Meta{}, runctl.Usagef("%v", err)
	}
	return r, p.Meta, nil
}

// ForDiff opens the two recordings diff compares, samples grouped, and
// warns on warn when they count different events.
func ForDiff(base, cur string, warn io.Writer) (*model.Profile, *model.Profile, error) {
	var ps [2]*model.Profile
	for i, path := range []string{base, cur} {
		p, err := Profile(path, Options{Group: true})
		if err != nil {
			return nil, nil, err
		}
		ps[i] = p
	}
	if !SameEvents(ps[0].Meta.Event, ps[1].Meta.Event) {
		fmt.Fprintf(warn, "sonde: warning: comparing different events (%s vs %s)\n", ps[0].Meta.Event, ps[1].Meta.Event)
	}
	return ps[0], ps[1], nil
}

// ForReport opens path for report sorted by keys: samples grouped, with the
// tracepoint fields among keys extracted; a key no event has is a usage
// error.
func ForReport(path string, keys []string) (*model.Profile, error) {
	o := Options{Group: true}
	if fk := report.FieldKeys(keys); len(fk) > 0 {
		o.Extra = report.FieldExtractor(fk)
	}
	p, err := Profile(path, o)
	if err != nil {
		return nil, err
	}
	if err := report.CheckFieldKeys(p, keys); err != nil {
		return nil, runctl.Usagef("%v", err)
	}
	return p, nil
}
