package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/datafile"
	"github.com/sonde-dev/sonde/internal/diff"
	"github.com/sonde-dev/sonde/internal/model"
)

func runDiff(args []string) (int, error) {
	fs := newFlags("diff", "BASE NEW [--sort dso,sym] [--min P] [--json]")
	sortKeys := fs.String("sort", "dso,sym", "compare by dso, sym or both")
	minPct := fs.Float64("min", 0, "hide entries below this percent in both profiles")
	asJSON := fs.Bool("json", false, "JSON output")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return 2, err
	}
	if len(files) != 2 {
		return 2, usageError{"give two data files: BASE NEW"}
	}
	keys := splitList(*sortKeys)
	for _, k := range keys {
		if k != "dso" && k != "sym" {
			return 2, usageError{fmt.Sprintf("--sort %q: want dso, sym or dso,sym", *sortKeys)}
		}
	}
	var profs [2]*model.Profile
	for i := range profs {
		p, err := datafile.ReadFileWith(files[i], datafile.ReadOptions{Group: true})
		if err != nil {
			return 1, err
		}
		profs[i] = p
	}
	if profs[0].Meta.Event != profs[1].Meta.Event {
		fmt.Fprintf(os.Stderr, "sonde: warning: comparing different events (%s vs %s)\n", profs[0].Meta.Event, profs[1].Meta.Event)
	}
	rows := diff.Compare(profs[0], profs[1], diff.Options{Sort: keys, Min: *minPct})
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *asJSON {
		return 0, diff.WriteJSON(w, rows)
	}
	diff.WriteText(w, profs[0], profs[1], rows)
	return 0, nil
}
