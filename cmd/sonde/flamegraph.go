package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/flamegraph"
)

func runFlamegraph(args []string) (int, error) {
	fs := newFlags("flamegraph", "[-i FILE] [-o out.svg|out.html|out.folded] [--title T] [--inverted] [--format svg|html|folded]")
	input := fs.String("i", "sonde.data", "data file, or collapsed stacks (.folded/.txt)")
	output := fs.String("o", "", "output file (default flame.html, or stdout for folded)")
	title := fs.String("title", "", "title above the graph")
	inverted := fs.Bool("inverted", false, "icicle graph: roots at the top")
	format := fs.String("format", "", "svg, html or folded (default from -o's extension)")
	diffMode := fs.Bool("diff", false, "differential flame graph of BASE NEW: red grew, blue shrank")
	var minWidth flamegraph.MinWidth
	fs.Var(&minWidth, "minwidth", "leave out of the drawing frames narrower than this: pixels (default 0.1, as FlameGraph) or a percentage of the total with % (0 draws all; folded output stays exact)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2, err
	}
	if *diffMode && len(pos) != 2 {
		return 2, usageError{"--diff takes two inputs: BASE NEW"}
	}
	if !*diffMode && len(pos) > 0 {
		return 2, usageError{fmt.Sprintf("unexpected argument %q (the input goes after -i)", pos[0])}
	}
	f := *format
	if f == "" {
		switch strings.ToLower(filepath.Ext(*output)) {
		case ".svg":
			f = "svg"
		case ".folded", ".txt", ".collapsed":
			f = "folded"
		default:
			f = "html"
		}
	}
	if f != "svg" && f != "html" && f != "folded" {
		return 2, usageError{fmt.Sprintf("--format %q: want svg, html or folded", f)}
	}
	var root *flamegraph.Node
	var subtitle string
	var deltas map[*flamegraph.Node]float64
	if *diffMode {
		if f == "folded" {
			return 2, usageError{"--diff draws a graph: use -o FILE.svg or .html"}
		}
		base, _, err := loadTree(pos[0])
		if err != nil {
			return 1, err
		}
		if root, subtitle, err = loadTree(pos[1]); err != nil {
			return 1, err
		}
		deltas = flamegraph.DiffTree(base, root)
		subtitle = "change from " + pos[0] + " to " + pos[1] + " (" + subtitle + ")"
	} else if root, subtitle, err = loadTree(*input); err != nil {
		return 1, err
	}
	out := *output
	if out == "" && f != "folded" {
		out = "flame." + f
	}
	dst := os.Stdout
	if out != "" {
		file, err := os.Create(out)
		if err != nil {
			return 1, fmt.Errorf("creating output: %w", err)
		}
		defer file.Close()
		dst = file
	}
	w := bufio.NewWriterSize(dst, 1<<16)
	o := flamegraph.Options{Title: *title, Subtitle: subtitle, Inverted: *inverted, Diff: deltas, MinWidth: minWidth}
	if o.Title == "" {
		o.Title = "sonde flame graph"
	}
	switch f {
	case "folded":
		err = flamegraph.WriteFolded(w, root)
	case "svg":
		err = flamegraph.WriteSVG(w, root, o)
	default:
		err = flamegraph.WriteHTML(w, root, o)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return 1, fmt.Errorf("writing flame graph: %w", err)
	}
	if out != "" {
		fmt.Fprintf(os.Stderr, "sonde: flame graph written to %s\n", out)
	}
	return 0, nil
}

// loadTree reads a sonde data file, or collapsed stacks when the file does
// not start with sonde's magic.
func loadTree(path string) (*flamegraph.Node, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("opening input: %w", err)
	}
	head := make([]byte, len(datafile.Magic))
	n, _ := f.Read(head)
	f.Close()
	if n == len(head) && bytes.Equal(head, []byte(datafile.Magic)) {
		p, err := datafile.ReadFileWith(path, datafile.ReadOptions{Group: true})
		if err != nil {
			return nil, "", err
		}
		sub := fmt.Sprintf("%s, %d samples (%d lost), %s", p.Meta.Event, p.SampleCount(), p.Meta.Lost, time.Duration(p.Meta.DurationNS).Round(time.Millisecond))
		if len(p.Meta.Command) > 0 {
			sub += ": " + strings.Join(p.Meta.Command, " ")
		}
		return flamegraph.FromProfile(p), sub, nil
	}
	f, err = os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("opening input: %w", err)
	}
	defer f.Close()
	root, err := flamegraph.ParseFolded(f, func(warning string) {
		fmt.Fprintf(os.Stderr, "sonde: warning: %s: %s\n", path, warning)
	})
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a sonde data file, and not collapsed stacks: %w", path, err)
	}
	return root, "", nil
}
