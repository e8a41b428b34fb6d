package report

import (
	"fmt"
	"io"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// BuildEach builds one report per recorded event, as perf does: the
// periods of different events do not add up.
func BuildEach(p *model.Profile, o Options) []*Report {
	if len(p.Meta.Events) <= 1 {
		return []*Report{Build(p, o)}
	}
	var reps []*Report
	for i := range p.Meta.Events {
		o.OnlyEvent = i + 1
		reps = append(reps, Build(p, o))
	}
	return reps
}

// WriteAll writes reports as text, a blank line between them, or as one
// JSON document (a list when there are several).
func WriteAll(w io.Writer, reps []*Report, asJSON bool) error {
	switch {
	case asJSON && len(reps) == 1:
		return jsonout.Write(w, reps[0])
	case asJSON:
		return jsonout.Write(w, reps)
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := r.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}
