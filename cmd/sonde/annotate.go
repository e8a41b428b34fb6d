package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/annotate"
	"github.com/sonde-dev/sonde/internal/datafile"
)

func runAnnotate(args []string) (int, error) {
	fs := newFlags("annotate", "[-i FILE] [-s SYMBOL] [--top N] [--stdio] [--no-source] [--asm-raw] [--json]")
	input := fs.String("i", "sonde.data", "data file to read")
	sym := fs.String("s", "", "annotate this function (default: the hottest ones)")
	top := fs.Int("top", 3, "how many hot functions without -s")
	fs.Bool("stdio", true, "plain text (the only mode; accepted for perf compatibility)")
	noSource := fs.Bool("no-source", false, "no source lines")
	raw := fs.Bool("asm-raw", false, "show instruction bytes")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() == 1 && *sym == "" {
		*sym = fs.Arg(0) // perf annotate SYMBOL
	} else if fs.NArg() > 0 {
		return 2, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(fs.NArg()-1))}
	}
	p, err := datafile.ReadFileWith(*input, datafile.ReadOptions{Group: true})
	if err != nil {
		return 1, err
	}
	o := annotate.Options{Symbol: *sym, Top: *top, NoSource: *noSource, AsmRaw: *raw}
	funcs, err := annotate.Build(p, o)
	if err != nil {
		return 1, err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *asJSON {
		return 0, annotate.WriteJSON(w, funcs)
	}
	annotate.WriteText(w, p, funcs, o)
	return 0, nil
}
