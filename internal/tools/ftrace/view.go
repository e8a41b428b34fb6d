package ftrace

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// ViewOptions are the replay, report, graph and dump flags.
type ViewOptions struct {
	Input       string
	MinDuration time.Duration // -t
	Depth       int           // -D
	Tid         int
	PerThread   bool
	Sort        string
	JSON        bool
	Format      string // dump --flamegraph: html, svg, folded
}

// Load reads an ftrace recording (a cut one up to its last chunk).
func Load(path string) (*Trace, error) {
	p, err := datafile.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := FromProfile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Calls are the calls of t the options keep.
func (o *ViewOptions) Calls(t *Trace) []Call {
	return ThreadCalls(t, t.Filter(uint64(o.MinDuration), o.Depth), o.Tid)
}

// View writes one of the views ("replay", "report", "graph", "chrome",
// "folded") of the recording at o.Input; arg is graph's function.
func View(w io.Writer, view, arg string, o ViewOptions) error {
	t, err := Load(o.Input)
	if err != nil {
		return err
	}
	switch view {
	case "replay":
		return Replay(w, t, ReplayOptions{MinDuration: uint64(o.MinDuration), Depth: o.Depth, Tid: o.Tid, PerThread: o.PerThread})
	case "report":
		rows := Stats(t, o.Calls(t))
		if err := SortRows(rows, o.Sort); err != nil {
			return err
		}
		if o.JSON {
			return jsonout.Write(w, t.Doc(rows))
		}
		return Report(w, rows)
	case "graph":
		n := Graph(t, o.Calls(t), arg, t.Root())
		if n == nil {
			return fmt.Errorf("%s is never called in %s", arg, o.Input)
		}
		return WriteGraph(w, n)
	case "chrome":
		return WriteChrome(w, t, o.Calls(t))
	case "folded":
		return Folded(w, t, o.Calls(t))
	}
	return fmt.Errorf("unknown view %q", view)
}

// Root names the traced program.
func (t *Trace) Root() string {
	if len(t.P.Meta.Command) > 0 {
		return filepath.Base(t.P.Meta.Command[0])
	}
	if len(t.P.Threads) > 0 {
		return t.P.Threads[0].Comm
	}
	return "all"
}
