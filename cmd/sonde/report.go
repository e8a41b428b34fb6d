package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/pprofout"
	"github.com/sonde-dev/sonde/internal/report"
	"github.com/sonde-dev/sonde/internal/tracefs"
)

func runReport(args []string) (int, error) {
	fs := newFlags("report", "[-i FILE] [--sort KEYS] [--children|--no-children] [-g caller|callee|none[,MIN%]] [--comm|--pid|--tid|--dso|--sym FILTER] [--percent-limit P] [--stdio] [--json] [--format text|json|pprof -o FILE]")
	input := fs.String("i", "sonde.data", "data file to read")
	sortKeys := fs.String("sort", "", "group by these keys: comm,pid,tid,dso,sym,cpu,srcline (default comm,dso,sym)")
	children := fs.Bool("children", false, "add callees' time to callers (default with call chains)")
	noChildren := fs.Bool("no-children", false, "self time only")
	graph := fs.String("g", "caller,0.5", "call graph: caller|callee|none[,MIN%]")
	comm := fs.String("comm", "", "only these commands (comma-separated)")
	pid := fs.String("pid", "", "only these pids")
	tid := fs.String("tid", "", "only these tids")
	dso := fs.String("dso", "", "only these objects (base names)")
	sym := fs.String("sym", "", "only these symbols")
	limit := fs.Float64("percent-limit", 0, "hide entries below this percent")
	fs.Bool("stdio", true, "plain text output (the only interactive-free mode; accepted for perf compatibility)")
	asJSON := fs.Bool("json", false, "JSON output")
	format := fs.String("format", "text", "text, json or pprof")
	output := fs.String("o", "", "output file (required for pprof; default stdout)")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, usageError{fmt.Sprintf("unexpected argument %q (the data file goes after -i)", fs.Arg(0))}
	}
	if *asJSON {
		*format = "json"
	}
	if *format != "text" && *format != "json" && *format != "pprof" {
		return 2, usageError{fmt.Sprintf("--format %q: want text, json or pprof", *format)}
	}
	keys, err := report.ParseSort(*sortKeys)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	o := report.Options{Sort: keys, Children: true, Graph: "caller", GraphMin: 0.5, PercentLimit: *limit}
	if *noChildren {
		o.Children = false
	}
	if *children {
		o.Children = true
	}
	g, minStr, hasMin := strings.Cut(*graph, ",")
	switch g {
	case "caller", "callee", "none":
		o.Graph = g
	case "graph", "fractal", "":
		o.Graph = "caller"
	default:
		return 2, usageError{fmt.Sprintf("-g %q: want caller, callee or none, optionally ,MIN%%", *graph)}
	}
	if hasMin {
		m, err := strconv.ParseFloat(strings.TrimSuffix(minStr, "%"), 64)
		if err != nil || m < 0 {
			return 2, usageError{fmt.Sprintf("-g %q: bad minimum percent", *graph)}
		}
		o.GraphMin = m
	}
	o.Comms = splitList(*comm)
	o.DSOs = splitList(*dso)
	o.Syms = splitList(*sym)
	if o.Pids, err = parseIntList(*pid, "--pid"); err != nil {
		return 2, err
	}
	if o.Tids, err = parseIntList(*tid, "--tid"); err != nil {
		return 2, err
	}
	ro := datafile.ReadOptions{Group: true}
	if fk := report.FieldKeys(keys); len(fk) > 0 {
		ro.Extra = fieldExtractor(fk)
	}
	prof, err := datafile.ReadFileWith(*input, ro)
	if err != nil {
		return 1, err
	}
	if err := report.CheckFieldKeys(prof, keys); err != nil {
		return 2, usageError{err.Error()}
	}
	out := os.Stdout
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			return 1, fmt.Errorf("creating output: %w", err)
		}
		defer f.Close()
		out = f
	} else if *format == "pprof" {
		return 2, usageError{"--format pprof needs -o FILE.pb.gz"}
	}
	w := bufio.NewWriterSize(out, 1<<16)
	defer w.Flush()
	switch *format {
	case "pprof":
		if err := pprofout.Write(w, prof); err != nil {
			return 1, err
		}
	case "json":
		if len(prof.Meta.Events) > 1 {
			// One report per event, as perf does: their periods do not add up.
			var reps []*report.Report
			for i := range prof.Meta.Events {
				o.OnlyEvent = i + 1
				reps = append(reps, report.Build(prof, o))
			}
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			if err := enc.Encode(reps); err != nil {
				return 1, err
			}
			break
		}
		if err := report.Build(prof, o).WriteJSON(w); err != nil {
			return 1, err
		}
	default:
		if len(prof.Meta.Events) > 1 {
			for i := range prof.Meta.Events {
				o.OnlyEvent = i + 1
				if err := report.Build(prof, o).WriteText(w); err != nil {
					return 1, err
				}
				fmt.Fprintln(w)
			}
			break
		}
		if err := report.Build(prof, o).WriteText(w); err != nil {
			return 1, err
		}
	}
	if err := w.Flush(); err != nil {
		return 1, fmt.Errorf("writing output: %w", err)
	}
	return 0, nil
}

// fieldExtractor returns the values of tracepoint fields as a group key.
func fieldExtractor(names []string) func(m *model.Meta, s *model.Sample) string {
	var cache [][]tracefs.Field
	return func(m *model.Meta, s *model.Sample) string {
		if cache == nil {
			cache = eventFields(&model.Profile{Meta: *m})
		}
		if int(s.Event) >= len(cache) {
			return ""
		}
		vals := make([]string, len(names))
		for i, n := range names {
			for _, f := range cache[s.Event] {
				if f.Name == n {
					vals[i] = f.String(s.Raw)
				}
			}
		}
		return strings.Join(vals, "\x00")
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
