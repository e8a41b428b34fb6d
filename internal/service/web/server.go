// Package web serves recordings to a browser: `sonde serve` and `sonde
// report --web`. The server holds the models and aggregates on request
// (flame tree, top table, sandwich, time lanes, source, diff, histograms,
// tracepoint fields) for the selection the UI sends; the browser never
// receives raw samples. The UI is one page embedded from internal/service/web/ui.
//
// Safety: the UI names inputs by index, never by path; names from
// recordings are data (JSON, set as text in the page); a strict
// Content-Security-Policy lets the page load nothing and talk to nothing
// but this server; bound to loopback, requests must name a loopback host,
// so another site cannot reach the server through DNS rebinding.
package web

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/service/web/ui"
)

// csp allows the page its own script and style and requests to this
// server only.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves a set of recordings.
type Server struct {
	inputs   []*input
	loopback bool       // bound to loopback: check Host
	mu       sync.Mutex // annotate reads binaries; one at a time

	// Answers are kept by query (exportKey), a few at a time: the page
	// asks again for what it showed (back, a shared link, base/new/diff).
	cacheMu sync.Mutex
	cache   map[string][]byte
	order   []string
}

// cacheSize answers are kept; each is at most a few megabytes.
const cacheSize = 16

// New serves profiles named by names (shown in the UI).
func New(names []string, profiles []*model.Profile) *Server {
	s := &Server{loopback: true}
	seen := map[string]int{}
	for i, p := range profiles {
		n := names[i]
		if seen[n]++; seen[n] > 1 {
			n = fmt.Sprintf("%s (%d)", n, seen[n])
		}
		s.inputs = append(s.inputs, newInput(n, p))
	}
	return s
}

// Load reads the recordings at paths (any kind load opens).
func Load(paths []string) (*Server, error) {
	var names []string
	var profs []*model.Profile
	for _, path := range paths {
		p, err := load.Profile(path, load.Options{})
		if err != nil {
			return nil, err
		}
		debug.FreeOSMemory() // the loader's buffers are garbage now
		names = append(names, filepath.Base(path))
		profs = append(profs, p)
	}
	return New(names, profs), nil
}

// Options say where to serve.
type Options struct {
	Addr   string    // host:port, default 127.0.0.1:0
	Open   bool      // open the URL in a browser
	Export string    // write one self-contained HTML file instead of serving
	Out    io.Writer // hears the URL
	// Fragment, when set, ends the URL told (after #): the page's filters
	// (comm=a&pid=7), as report --web passes its own.
	Fragment string
}

// Serve is sonde serve: Run until Ctrl-C, telling the URL on standard
// error.
func Serve(paths []string, o Options) error {
	ctx, stop := runctl.WithSignals(context.Background())
	defer stop()
	if o.Out == nil {
		o.Out = os.Stderr
	}
	return Run(ctx, paths, o)
}

// Run loads paths and serves them until ctx ends, or exports them.
func Run(ctx context.Context, paths []string, o Options) error {
	if len(paths) == 0 {
		paths = []string{"sonde.data"}
	}
	// The server keeps the models and builds each answer afresh: collect
	// garbage early so it holds little beyond them (the loader's buffers,
	// a big tree's arrays), and give back what loading took. The models
	// dwarf every answer, so a low GC target costs little time.
	debug.SetGCPercent(10)
	s, err := Load(paths)
	if err != nil {
		return err
	}
	// A soft limit makes the runtime hand freed pages back soon, so an
	// answer's transient arrays do not stay in the resident set.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.SetMemoryLimit(int64(ms.HeapAlloc)*5/4 + 8<<20)
	if o.Export != "" {
		if err := s.ExportFile(o.Export); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "sonde: wrote %s (%s): the unfiltered views of %s\n", o.Export, outfile.Size(o.Export), strings.Join(paths, ", "))
		return nil
	}
	// The first page shows each input's whole flame graph: have it ready.
	for i := range s.inputs {
		s.answer("flame", url.Values{"f": {strconv.Itoa(i)}})
	}
	debug.FreeOSMemory()
	ln, err := Listen(o.Addr, o.Out)
	if err != nil {
		return err
	}
	s.loopback = ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	u := "http://" + ln.Addr().String() + "/"
	if o.Fragment != "" {
		u += "#" + o.Fragment
	}
	fmt.Fprintf(o.Out, "sonde: serving %s at %s (Ctrl-C stops)\n", strings.Join(paths, ", "), u)
	if o.Open {
		if err := exec.Command("xdg-open", u).Start(); err != nil {
			fmt.Fprintf(o.Out, "sonde: could not open a browser (%v): open %s yourself\n", err, u)
		}
	}
	return ServeUntil(ctx, ln, s.Handler())
}

// ServeUntil serves h on ln until ctx ends (Ctrl-C), then stops within 2 s:
// every page sonde serves (serve, report --web, why --web) ends this way.
func ServeUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	runctl.Ready()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// Listen opens a server's socket (loopback when addr is ""), and warns
// on out when it is not loopback: the views have no login, and the
// recordings hold command lines, symbols and source.
func Listen(addr string, out io.Writer) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		fmt.Fprintf(out, "sonde: warning: listening on %s, not loopback: anyone who can reach this port reads the recordings (command lines, symbols, source files) without a login; prefer the default 127.0.0.1 and ssh -L\n", ln.Addr())
	}
	return ln, nil
}

// Page serves a bundled page's files from files (its index.html and
// dist/app.js, dist/app.css) on mux, as /, /app.js and /app.css.
func Page(mux *http.ServeMux, files embed.FS) {
	static := func(name, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, err := files.ReadFile(name)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.Write(b)
		}
	}
	mux.HandleFunc("GET /{$}", static("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", static("dist/app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", static("dist/app.css", "text/css; charset=utf-8"))
}

// Handler is the whole site: the page, its script and style, and /api/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	Page(mux, ui.Files)
	mux.HandleFunc("GET /api/{view}", s.api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.loopback && !loopbackHost(r.Host) {
			http.Error(w, "sonde serves loopback names only (Host "+strconv.Quote(r.Host)+")", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// badRequest is an error in what the page asked.
type badRequest struct{ error }

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	b, err := s.answer(r.PathValue("view"), r.URL.Query())
	if err != nil {
		code := http.StatusInternalServerError
		var br badRequest
		if errors.As(err, &br) {
			code = http.StatusBadRequest
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// answer is a view's JSON, from the cache when it was asked for lately.
func (s *Server) answer(view string, q url.Values) ([]byte, error) {
	key := exportKey(view, q)
	s.cacheMu.Lock()
	b, ok := s.cache[key]
	s.cacheMu.Unlock()
	if ok {
		return b, nil
	}
	v, err := s.view(view, q)
	if err != nil {
		return nil, err
	}
	if b, err = json.Marshal(v); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", view, err)
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.cache == nil {
		s.cache = map[string][]byte{}
	}
	if _, ok := s.cache[key]; !ok {
		if len(s.order) == cacheSize {
			delete(s.cache, s.order[0])
			s.order = s.order[1:]
		}
		s.order = append(s.order, key)
	}
	s.cache[key] = b
	return b, nil
}

// input is the input a query's key names by index: the only way the page
// can name a file.
func (s *Server) input(q url.Values, key string) (*input, error) {
	v := q.Get(key)
	if v == "" {
		v = "0"
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= len(s.inputs) {
		return nil, badRequest{fmt.Errorf("%s=%q: want an input index below %d", key, v, len(s.inputs))}
	}
	return s.inputs[i], nil
}

// view answers one API request.
func (s *Server) view(name string, q url.Values) (any, error) {
	if name == "meta" {
		d := &MetaDoc{}
		for _, in := range s.inputs {
			d.Inputs = append(d.Inputs, in.meta())
		}
		return d, nil
	}
	in, err := s.input(q, "f")
	if err != nil {
		return nil, err
	}
	f, err := parseFilter(q)
	if err != nil {
		return nil, badRequest{err}
	}
	switch name {
	case "flame":
		return in.flame(f).doc("all"), nil
	case "top":
		return in.top(f), nil
	case "sandwich":
		if q.Get("fn") == "" {
			return nil, badRequest{errors.New("sandwich needs fn")}
		}
		return in.sandwich(f, q.Get("fn")), nil
	case "time":
		return in.timeline(f), nil
	case "source":
		s.mu.Lock()
		defer s.mu.Unlock()
		if q.Get("fn") == "" {
			return nil, badRequest{errors.New("source needs fn")}
		}
		return in.source(f, q.Get("fn")), nil
	case "diff":
		base, err := s.input(q, "base")
		if err != nil {
			return nil, err
		}
		return diffDoc(base.flame(f), in.flame(f)), nil
	case "hist":
		return in.histograms(f), nil
	case "fields":
		return in.fieldTables(f), nil
	}
	return nil, badRequest{fmt.Errorf("no view %q", name)}
}

// ExportFile writes the UI with the data inlined to path.
func (s *Server) ExportFile(path string) error {
	var b bytes.Buffer
	if err := s.Export(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
