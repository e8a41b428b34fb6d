package load

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model"
)

// ImportFile converts in (perf.data, its pipe stream or perf script text)
// into a sonde data file at out, named once on this machine; summary, when
// not nil, gets one line as record's, with what could not be named.
func ImportFile(in, out string, o Options, summary io.Writer) error {
	if err := datafile.CheckPath(out); err != nil {
		return err
	}
	var unmatched int
	warn := o.Warn
	if warn == nil {
		warn = StderrWarn(in)
	}
	o.Warn = func(w string) {
		unmatched++
		warn(w)
	}
	p, _, kind, err := Import(in, o)
	if err != nil {
		return err
	}
	for _, w := range p.Meta.Warnings {
		// The views say it in their header; an import has only this line
		// (the data file it writes keeps the warning).
		if strings.HasPrefix(w, model.CutWarning) {
			warn(w)
		}
	}
	if err := datafile.WriteFile(out, p); err != nil {
		return err // it names the file
	}
	if summary == nil {
		return nil
	}
	fmt.Fprintf(summary, "sonde: %s (%s): %d samples (%d lost) of %s in %s written to %s (%s)",
		in, kind, p.SampleCount(), p.Meta.Lost, p.Meta.Event, time.Duration(p.Meta.DurationNS).Round(time.Millisecond), outfile.Name(out), outfile.Size(out))
	if kind == KindPerfData {
		fmt.Fprintf(summary, "; objects: %d named, %d unmatched", namedObjects(p), unmatched)
	}
	fmt.Fprintln(summary)
	return nil
}

// namedObjects counts the objects with at least one named function.
func namedObjects(p *model.Profile) int {
	named := map[int32]bool{}
	for _, fn := range p.Funcs {
		if fn.DSO >= 0 {
			named[fn.DSO] = true
		}
	}
	return len(named)
}
