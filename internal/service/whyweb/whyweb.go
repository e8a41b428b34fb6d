// Package whyweb is `sonde why --web`: one run's findings in the browser,
// ranked by share, each finding's chain drawn as a graph (waiters, the
// threads that woke them, the root) and its stacks as a flame graph, and
// every target thread's wall time as a budget bar (on CPU, runnable,
// throttled, blocked by reason) and over time (the report's timeline).
// The page reads /api/why, the very document `why --json` writes, so the
// two cannot disagree; the flame graphs (/api/flame/N.svg) are drawn from
// the same report's stacks.
package whyweb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/service/web"
	"github.com/sonde-dev/sonde/internal/service/whyweb/ui"
	"github.com/sonde-dev/sonde/internal/tools/why"
	"github.com/sonde-dev/sonde/internal/view/flamegraph"
)

// Slices is how many time slices the page's timeline asks the run for.
const Slices = 60

// Options say where to serve.
type Options struct {
	Addr string    // host:port, default 127.0.0.1:0
	Out  io.Writer // hears the URL (default standard error)
}

// Handler serves the page, its script and style, and the report at /api/why.
func Handler(rep *why.Report) (http.Handler, error) {
	var doc bytes.Buffer
	if err := rep.WriteJSON(&doc); err != nil {
		return nil, fmt.Errorf("writing the findings: %w", err)
	}
	mux := http.NewServeMux()
	web.Page(mux, ui.Files)
	mux.HandleFunc("GET /api/why", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc.Bytes())
	})
	mux.HandleFunc("GET /api/flame/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("n"), ".svg"))
		if err != nil || n < 1 || n > len(rep.Findings) {
			http.Error(w, "no such finding", http.StatusNotFound)
			return
		}
		var svg bytes.Buffer
		if err := flame(&svg, rep, n); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(svg.Bytes())
	})
	return mux, nil
}

// flame draws finding n's (from 1) stacks as an interactive flame graph.
func flame(w io.Writer, rep *why.Report, n int) error {
	var folded bytes.Buffer
	if err := rep.WriteFindingFolded(&folded, n-1); err != nil {
		return err
	}
	if folded.Len() == 0 {
		return fmt.Errorf("finding %d has no stacks", n)
	}
	root, err := flamegraph.ParseFolded(&folded, func(string) {})
	if err != nil {
		return fmt.Errorf("building finding %d's flame graph: %w", n, err)
	}
	f := rep.Findings[n-1]
	title := fmt.Sprintf("finding %d: %s", n, f.Kind)
	if f.Function != "" {
		title += " under " + f.Function
	}
	return flamegraph.WriteSVG(w, root, flamegraph.Options{Title: title, Subtitle: "each thread's stacks, as wide as the time charged to them", Unit: "ns", Width: 1100})
}

// Serve serves rep until ctx ends (Ctrl-C), telling the URL on o.Out.
func Serve(ctx context.Context, rep *why.Report, o Options) error {
	if o.Out == nil {
		o.Out = os.Stderr
	}
	h, err := Handler(rep)
	if err != nil {
		return err
	}
	ln, err := web.Listen(o.Addr, o.Out)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "sonde: serving the findings at http://%s/ (Ctrl-C stops)\n", ln.Addr())
	return web.ServeUntil(ctx, ln, h)
}
