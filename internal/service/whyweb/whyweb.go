// Package whyweb is `sonde why --web`: one run's findings in the browser,
// ranked by share, each finding's chain drawn as a graph (waiters, the
// threads that woke them, the root), and every target thread's wall time
// as a budget bar (on CPU, runnable, throttled, blocked by reason). The
// page reads /api/why, the very document `why --json` writes, so the two
// cannot disagree.
package whyweb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/sonde-dev/sonde/internal/service/web"
	"github.com/sonde-dev/sonde/internal/service/whyweb/ui"
	"github.com/sonde-dev/sonde/internal/tools/why"
)

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
	return mux, nil
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
