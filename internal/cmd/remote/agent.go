package remote

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/service/continuous"
	"github.com/sonde-dev/sonde/internal/service/metrics"

	"github.com/sonde-dev/sonde/internal/collect/probe"
)

// AgentConfig is what `sonde agent` serves and how.
type AgentConfig struct {
	Listen    string // host:port; loopback unless the operator says otherwise
	TokenFile string // a shared secret clients send as a bearer token
	TLSCert   string // the agent's certificate and key: HTTPS (HTTP/2 over TLS)
	TLSKey    string
	ClientCA  string // clients must present a certificate this CA signed

	MaxRuns    int           // runs at once; more are refused (503), never queued
	MaxRunTime time.Duration // a run still going then is ended
	MaxOutput  int64         // bytes of output files one run may send back

	MetricsAddr   string        // serve Prometheus /metrics here
	MetricsWindow time.Duration // windows of the windowed metric sources
	Continuous    continuous.Options
	ContinuousOn  bool
	// PprofDir, when set, receives the agent's own CPU profile of the whole
	// run (cpu.pprof) and a heap profile at exit (heap.pprof): a hidden
	// option for measuring the agent's overhead.
	PprofDir string

	// NewRoot builds sonde's command tree, to validate command lines with
	// the very flags the runs will parse.
	NewRoot func() *cobra.Command
	// Exe is the sonde binary runs start (this one).
	Exe string
	Log *log.Logger
}

// AddFlags defines the agent's options.
func (c *AgentConfig) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&c.Listen, "listen", "", "address to serve the API on (default "+DefaultListen+" with --token-file or --tls-cert)")
	f.StringVar(&c.TokenFile, "token-file", "", "file holding the token clients must send")
	f.StringVar(&c.TLSCert, "tls-cert", "", "the agent's certificate (PEM): serve HTTPS")
	f.StringVar(&c.TLSKey, "tls-key", "", "the key of --tls-cert (PEM)")
	f.StringVar(&c.ClientCA, "client-ca", "", "accept only clients with a certificate from this CA (PEM)")
	f.IntVar(&c.MaxRuns, "max-runs", DefaultMaxRuns, "runs at once; more are refused, not queued")
	cli.DurationVarP(f, &c.MaxRunTime, "max-run-time", "", DefaultMaxRunTime, "a run still going after this is ended")
	f.Int64Var(&c.MaxOutput, "max-output", DefaultMaxOutput, "bytes of output files one run may send back")
	f.StringVar(&c.MetricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (docs/remote.md lists them)")
	cli.DurationVarP(f, &c.MetricsWindow, "metrics-window", "", metrics.DefaultWindow, "how often syscount and block I/O totals are added to the metrics")
	f.BoolVar(&c.ContinuousOn, "continuous", false, "profile on-CPU stacks system-wide without end, one profile per --every, sent to --otlp")
	cli.DurationVarP(f, &c.Continuous.Every, "every", "", continuous.DefaultEvery, "with --continuous: the length of one profile")
	f.StringVar(&c.Continuous.OTLP, "otlp", "", "with --continuous: the OTLP/HTTP endpoint to push profiles to (http://collector:4318)")
	f.Uint64Var(&c.Continuous.Freq, "freq", continuous.DefaultFreq, "with --continuous: samples per second per CPU")
	f.BoolVar(&c.Continuous.Lines, "lines", false, "with --continuous: add source files and lines from DWARF (more CPU and memory)")
	f.StringVar(&c.PprofDir, "debug-pprof", "", "write the agent's own CPU and heap profiles into this directory")
	_ = f.MarkHidden("debug-pprof")
	cli.AtLeast(f, 1, "max-runs", "freq")
	cli.AtLeast(f, time.Second, "every")
}

// RunAgent serves what c asks for (the API, metrics) until ctx ends or one
// of them fails.
func RunAgent(ctx context.Context, c AgentConfig) error {
	api := c.Listen != "" || c.TokenFile != "" || c.TLSCert != ""
	if !api && c.MetricsAddr == "" && !c.ContinuousOn {
		return cli.Usagef("nothing to do: give --token-file F (the API for sonde --remote), --metrics ADDR or --continuous")
	}
	if !c.ContinuousOn && c.Continuous.OTLP != "" {
		return cli.Usagef("--otlp sends the profiles of --continuous: add --continuous")
	}
	if c.PprofDir != "" {
		stop, err := selfProfile(c.PprofDir)
		if err != nil {
			return err
		}
		defer stop()
	}
	var a *Agent
	if api {
		var err error
		if a, err = NewAgent(c); err != nil {
			return err
		}
		c.Log = a.cfg.Log
	}
	if c.Log == nil {
		c.Log = log.New(os.Stderr, "sonde agent: ", log.LstdFlags)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := func(serve func() error) {
		wg.Go(func() {
			if err := serve(); err != nil {
				cancel(err)
			}
		})
	}
	if a != nil {
		start(func() error { return a.Serve(ctx, nil) })
	}
	mo := metrics.Options{Addr: c.MetricsAddr, Window: c.MetricsWindow, Log: c.Log}
	if c.ContinuousOn {
		c.Continuous.Log = c.Log
		if c.Continuous.OTLP == "" {
			c.Continuous.OnProfile = func(p pprofile.Profiles) {
				c.Log.Printf("continuous: %d stacks from %d processes (no --otlp: not sent)", p.SampleCount(), p.ResourceProfiles().Len())
			}
		}
		prof, err := continuous.New(c.Continuous)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		mo.Extra = append(mo.Extra, prof.Collector())
		start(func() error { return prof.Run(ctx) })
	}
	if c.MetricsAddr != "" {
		start(func() error { return metrics.Serve(ctx, mo, nil) })
	}
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// selfProfile profiles the agent's CPU into dir from 5 s after start (the
// steady state, as bench -agent measures it); stop ends it and writes a
// heap profile beside it.
func selfProfile(dir string) (stop func(), err error) {
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("profiling the agent: %w", err)
	}
	started := time.AfterFunc(5*time.Second, func() { _ = pprof.StartCPUProfile(cpu) })
	return func() {
		if !started.Stop() {
			pprof.StopCPUProfile()
		}
		cpu.Close()
		if heap, err := os.Create(filepath.Join(dir, "heap.pprof")); err == nil {
			_ = pprof.WriteHeapProfile(heap)
			heap.Close()
		}
	}, nil
}

// Defaults for AgentConfig's zero fields.
const (
	DefaultListen     = "127.0.0.1:7878"
	DefaultMaxRuns    = 4
	DefaultMaxRunTime = 10 * time.Minute
	DefaultMaxOutput  = 1 << 30
	maxRequest        = 64 << 10 // bytes of a request body: a command line
	stopGrace         = 5 * time.Second
)

// Agent serves runs.
type Agent struct {
	cfg   AgentConfig
	token [sha256.Size]byte // the token's hash: compared in constant time, whatever its length
	slots chan struct{}
	tls   *tls.Config
}

// NewAgent checks the configuration and reads the secrets.
func NewAgent(c AgentConfig) (*Agent, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxRuns <= 0 {
		c.MaxRuns = DefaultMaxRuns
	}
	if c.MaxRunTime <= 0 {
		c.MaxRunTime = DefaultMaxRunTime
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.Log == nil {
		c.Log = log.New(os.Stderr, "sonde agent: ", log.LstdFlags)
	}
	if c.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding sonde's own binary: %w", err)
		}
		c.Exe = exe
	}
	a := &Agent{cfg: c, slots: make(chan struct{}, c.MaxRuns)}
	if c.TokenFile == "" && c.ClientCA == "" {
		return nil, fmt.Errorf("the agent needs a way to tell clients apart: --token-file F, or --tls-cert, --tls-key and --client-ca")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if c.ClientCA != "" && c.TLSCert == "" {
		return nil, fmt.Errorf("--client-ca needs the agent's own --tls-cert and --tls-key")
	}
	if c.TokenFile != "" {
		tok, err := ReadToken(c.TokenFile)
		if err != nil {
			return nil, err
		}
		a.token = sha256.Sum256([]byte(tok))
		if w := TokenFileWarning(c.TokenFile); w != "" {
			c.Log.Print("warning: " + w)
		}
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("loading the agent's certificate: %w", err)
		}
		a.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
		if c.ClientCA != "" {
			pool, err := certPool(c.ClientCA)
			if err != nil {
				return nil, err
			}
			a.tls.ClientCAs, a.tls.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	return a, nil
}

// TokenFileWarning says what is wrong with a token file's permissions
// ("" when nothing): readable by every user, it lets anyone on the
// machine run the agent's commands.
func TokenFileWarning(path string) string {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o004 == 0 {
		return ""
	}
	return fmt.Sprintf("the token file %s is readable by every user (mode %04o): anyone on this machine can use the agent; chmod 600 %s", path, st.Mode().Perm(), path)
}

// ReadToken reads a token file: one line, at least 16 characters.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("token in %s is %d characters: use at least 16 (head -c 24 /dev/urandom | base64 > %s)", path, len(tok), path)
	}
	return tok, nil
}

func certPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no PEM certificate in %s", path)
	}
	return pool, nil
}

// Serve listens and serves until ctx ends; ready, if set, learns the
// address (for :0).
func (a *Agent) Serve(ctx context.Context, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	if a.tls == nil && !isLoopback(ln.Addr()) && a.cfg.TokenFile != "" {
		a.cfg.Log.Printf("warning: %s is not loopback and has no TLS: the token crosses the network in clear", ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/run", a.handleRun)
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(a.tls == nil)
	srv := &http.Server{Handler: mux, Protocols: &protos, TLSConfig: a.tls,
		ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog: a.cfg.Log} // TLS handshake failures (a wrong client certificate) are logged there
	if ready != nil {
		ready(ln.Addr())
	}
	runctl.Ready()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), stopGrace+time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	a.cfg.Log.Printf("serving %s (at most %d runs at once, %s each)", ln.Addr(), a.cfg.MaxRuns, a.cfg.MaxRunTime)
	serve := func() error { return srv.Serve(ln) }
	if a.tls != nil {
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// authorized checks the bearer token in constant time (the TLS layer has
// already checked a client certificate, when one is required).
func (a *Agent) authorized(r *http.Request) bool {
	if a.cfg.TokenFile == "" {
		return r.TLS != nil && len(r.TLS.VerifiedChains) > 0
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], a.token[:]) == 1
}

// runRequest is a run's request body.
type runRequest struct {
	Args []string `json:"args"`
}

func (a *Agent) handleRun(w http.ResponseWriter, r *http.Request) {
	who := r.RemoteAddr
	if !a.authorized(r) {
		a.cfg.Log.Printf("%s: refused: missing or wrong token", who) // never the token itself
		http.Error(w, "wrong or missing token", http.StatusUnauthorized)
		return
	}
	var req runRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest)).Decode(&req); err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	root := a.cfg.NewRoot()
	plan, err := Validate(root, req.Args)
	if err != nil {
		a.cfg.Log.Printf("%s: refused %q: %v", who, req.Args, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		a.cfg.Log.Printf("%s: refused %s: busy", who, plan.Args[0])
		http.Error(w, fmt.Sprintf("agent busy: %d runs in progress, the most it takes (sonde agent --max-runs); try again later", a.cfg.MaxRuns), http.StatusServiceUnavailable)
		return
	}
	a.cfg.Log.Printf("%s: running %s", who, strings.Join(plan.Args, " "))
	w.Header().Set("Content-Type", "application/x-sonde-run")
	w.WriteHeader(http.StatusOK)
	out := &frameWriter{w: w, rc: http.NewResponseController(w)}
	out.flush()
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.MaxRunTime)
	defer cancel()
	code, msg := a.run(ctx, plan, out)
	a.cfg.Log.Printf("%s: %s ended: status %d %s", who, plan.Args[0], code, msg)
	out.frame(frameExit, exitPayload(code, msg))
}

// frameWriter serialises frames from the output pipes onto the response.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	rc  *http.ResponseController
	err error
}

func (f *frameWriter) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = writeFrame(f.w, kind, p)
	}
	if f.err == nil {
		f.err = f.rc.Flush()
	}
	return f.err
}

func (f *frameWriter) flush() { f.frame(frameStderr, nil) }

// run starts the command as a child sonde in a fresh directory, streams
// its output, and on the way out (end, time limit, client gone) stops it:
// SIGTERM, which every sonde command handles by detaching its probes, then
// SIGKILL after a grace period, then removes any probe a killed child left.
func (a *Agent) run(ctx context.Context, plan *Plan, out *frameWriter) (int, string) {
	dir, err := os.MkdirTemp("", "sonde-run-")
	if err != nil {
		return 1, fmt.Sprintf("making the run's directory: %v", err)
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(a.cfg.Exe, plan.Args...)
	cmd.Dir = dir
	cmd.Env = childEnv(dir)
	// Its own process group, so signals reach whatever it started; and it
	// dies with the agent.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 1, err.Error()
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 1, err.Error()
	}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Sprintf("starting sonde: %v", err)
	}
	var copying sync.WaitGroup
	for kind, r := range map[byte]io.Reader{frameStdout: stdout, frameStderr: stderr} {
		copying.Add(1)
		go func() {
			defer copying.Done()
			pump(r, kind, out)
		}()
	}
	done := make(chan struct{})
	var why string
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		why = "ended by the agent: the client went away"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = fmt.Sprintf("ended by the agent: longer than its limit of %s (sonde agent --max-run-time)", a.cfg.MaxRunTime)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopGrace):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	copying.Wait()
	err = cmd.Wait()
	close(done)
	if n := probe.CleanStale(); n > 0 {
		a.cfg.Log.Printf("removed %d probes a stopped run left", n)
	}
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return 1, fmt.Sprintf("running sonde: %v", err)
		}
		code = ee.ExitCode()
		if code < 0 {
			code = 1
		}
	}
	if why != "" || ctx.Err() != nil {
		if why == "" {
			why = "ended by the agent"
		}
		return max(code, 1), why
	}
	if err := a.sendFiles(dir, plan, out); err != nil {
		return max(code, 1), err.Error()
	}
	return code, ""
}

// pump copies one pipe into frames, a pipe read at a time.
func pump(r io.Reader, kind byte, out *frameWriter) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && out.frame(kind, buf[:n]) != nil {
			io.Copy(io.Discard, r) // keep the child from blocking on a full pipe
			return
		}
		if err != nil {
			return
		}
	}
}

// sendFiles sends the run's output files, each announced by its flag.
func (a *Agent) sendFiles(dir string, plan *Plan, out *frameWriter) error {
	for flag, name := range plan.Outputs {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // the command wrote none (it failed, or had nothing to write)
		}
		if err != nil {
			return fmt.Errorf("reading the --%s file: %w", flag, err)
		}
		err = a.sendFile(f, flag, out)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) sendFile(f *os.File, flag string, out *frameWriter) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading the --%s file: %w", flag, err)
	}
	if !st.Mode().IsRegular() || st.Size() > a.cfg.MaxOutput {
		return fmt.Errorf("the --%s file is %d bytes, over the agent's limit of %d (sonde agent --max-output)", flag, st.Size(), a.cfg.MaxOutput)
	}
	if err := out.frame(frameFile, []byte(flag)); err != nil {
		return err
	}
	buf := make([]byte, maxFrame)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if err := out.frame(frameData, buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the --%s file: %w", flag, err)
		}
	}
}

// childEnv is the agent's environment without what would make the child a
// client again, with the run's directory as its temporary directory.
func childEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == EnvRemote || k == EnvToken || k == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TMPDIR="+dir)
}
