package remote

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
	"github.com/sonde-dev/sonde/internal/format/outfile"
)

// Environment variables a workstation may set instead of the flags.
const (
	EnvRemote = "SONDE_REMOTE" // HOST:PORT of an agent
	EnvToken  = "SONDE_TOKEN"  // the agent's token itself
)

// Client is where `sonde --remote` sends commands and how it proves who it is.
type Client struct {
	Addr      string // HOST:PORT
	TokenFile string
	TLSCA     string // verify the agent with this CA: HTTPS
	TLSCert   string // this client's certificate and key, for an agent with --client-ca
	TLSKey    string
}

// clientFlags are the persistent flags AddFlags defines: they stay here.
var clientFlags = []string{"remote", "token-file", "tls-ca", "tls-cert", "tls-key"}

// AddFlags defines --remote and its credentials on every command.
func (c *Client) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Addr, "remote", "", "run the command on the sonde agent at HOST:PORT and show the result here (or $"+EnvRemote+")")
	fs.StringVar(&c.TokenFile, "token-file", "", "with --remote: the agent's token (or the token itself in $"+EnvToken+")")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "with --remote: talk HTTPS and trust the agent's certificate from this CA")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "with --remote: this client's certificate, for an agent with --client-ca")
	fs.StringVar(&c.TLSKey, "tls-key", "", "with --remote: the key of --tls-cert")
}

// local names the commands that stay on the workstation with --remote: they
// read or write the files remote runs brought back, or are about sonde.
var local = map[string]bool{
	"report": true, "script": true, "annotate": true, "diff": true, "flamegraph": true, "import": true,
	"agent": true, "help": true, "completion": true, "version": true, "man": true, "sonde": true,
}

// Wanted says whether cmd runs on an agent: --remote or $SONDE_REMOTE is
// set, and it is a command agents run. The other commands run here.
func (c *Client) Wanted(cmd *cobra.Command) bool {
	if c.Addr == "" {
		c.Addr = os.Getenv(EnvRemote)
	}
	return c.Addr != "" && !local[cmd.Name()]
}

// Hook is a PersistentPreRunE: commands agents run go to the agent (see
// Wanted), the others run here after local.
func (c *Client) Hook(local func(cmd *cobra.Command)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if c.Wanted(cmd) {
			return c.Forward(cmd, args)
		}
		local(cmd)
		return nil
	}
}

// Forward runs cmd (already parsed here, with the flags the agent parses
// too) on the agent: its stdout and stderr stream here, its output files
// are written to the paths given here. The error ends sonde with the remote
// command's status (cli.ExitStatus), so the local RunE never runs.
func (c *Client) Forward(cmd *cobra.Command, args []string) error {
	if !offered(cmd) {
		return cli.Usagef("%s does not run through an agent (--remote runs %s)", cmd.Name(), strings.Join(commandList(cmd.Root()), ", "))
	}
	// A file sent to standard output (-o -) comes back on the run's
	// standard output: the same checks as a local run, here.
	if _, err := cli.StdoutOutput(cmd); err != nil {
		return err
	}
	line := []string{cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains(clientFlags, f.Name) {
			for _, v := range flagValues(f) {
				line = append(line, "--"+f.Name+"="+v)
			}
		}
	})
	outputs := map[string]string{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if v := f.Value.String(); kindOf(f) == flagOutput && v != "" && v != "-" {
			outputs[f.Name] = v
		}
	})
	ctx, stop := runctl.WithSignals(context.Background())
	defer stop()
	code, err := c.Run(ctx, append(line, args...), outputs, os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	return cli.ExitStatus(code)
}

// Run sends args to the agent and renders what comes back: stdout and
// stderr as they arrive, each output file to the path outputs gives its
// flag. It returns the remote command's exit status.
func (c *Client) Run(ctx context.Context, args []string, outputs map[string]string, stdout, stderr io.Writer) (int, error) {
	hc, scheme, err := c.httpClient()
	if err != nil {
		return 0, err
	}
	token := os.Getenv(EnvToken)
	if c.TokenFile != "" {
		if token, err = ReadToken(c.TokenFile); err != nil {
			return 0, err
		}
	}
	body, _ := json.Marshal(runRequest{Args: args})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, scheme+"://"+c.Addr+"/v1/run", bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("agent address %q: %w", c.Addr, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, errInterrupted
		}
		return 0, fmt.Errorf("reaching the agent at %s: %w", c.Addr, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 1024)).ReadString('\n')
		line = strings.TrimSpace(line)
		if resp.StatusCode == http.StatusBadRequest {
			return 0, cli.Usagef("agent at %s refused the command line: %s", c.Addr, line)
		}
		return 0, fmt.Errorf("agent at %s refused the run: %s", c.Addr, line)
	}
	code, err := render(resp.Body, outputs, stdout, stderr, c.Addr)
	if err != nil && ctx.Err() != nil {
		return 0, errInterrupted
	}
	return code, err
}

// errInterrupted: Ctrl-C here ends the stream, which ends the run there.
var errInterrupted = errors.New("interrupted: the agent stopped the run and kept nothing (bound remote runs with --duration)")

// render reads a run's frames. Files go where outputs says, under names
// chosen here: the wire names only the flag, never a path.
func render(body io.Reader, outputs map[string]string, stdout, stderr io.Writer, from string) (int, error) {
	fr := frameReader{r: body}
	var file *outfile.File
	defer func() {
		if file != nil {
			file.Abort()
		}
	}()
	finish := func() error {
		if file == nil {
			return nil
		}
		f := file
		file = nil
		return f.Commit()
	}
	for {
		kind, p, err := fr.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("the agent at %s ended the stream before the run ended", from)
			}
			return 0, fmt.Errorf("reading the run from %s: %w", from, err)
		}
		switch kind {
		case frameStdout:
			stdout.Write(p)
		case frameStderr:
			stderr.Write(p)
		case frameFile:
			if err := finish(); err != nil {
				return 0, err
			}
			path, ok := outputs[string(p)]
			if !ok {
				return 0, fmt.Errorf("the agent at %s sent a --%s file that was not asked for", from, p)
			}
			if file, err = outfile.Create(path); err != nil {
				return 0, err
			}
		case frameData:
			if file == nil {
				return 0, fmt.Errorf("the agent at %s sent file data before naming the file", from)
			}
			if _, err := file.Write(p); err != nil {
				return 0, err
			}
		case frameExit:
			code, msg, err := parseExit(p)
			if err != nil {
				return 0, fmt.Errorf("reading the run from %s: %w", from, err)
			}
			if err := finish(); err != nil {
				return 0, err
			}
			if msg != "" {
				return 0, fmt.Errorf("agent at %s: %s", from, msg)
			}
			return code, nil
		}
	}
}

// httpClient speaks HTTP/2: over TLS with --tls-ca, else in clear (prior
// knowledge, h2c) for a token-only agent.
func (c *Client) httpClient() (*http.Client, string, error) {
	var protos http.Protocols
	tr := &http.Transport{Protocols: &protos, Proxy: nil, DialContext: (&net.Dialer{}).DialContext}
	if c.TLSCA == "" && c.TLSCert == "" {
		protos.SetUnencryptedHTTP2(true)
		return &http.Client{Transport: tr}, "http", nil
	}
	protos.SetHTTP2(true)
	tc := &tls.Config{MinVersion: tls.VersionTLS13}
	if c.TLSCA != "" {
		pool, err := certPool(c.TLSCA)
		if err != nil {
			return nil, "", err
		}
		tc.RootCAs = pool
	}
	if c.TLSCert != "" || c.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("loading the client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr}, "https", nil
}

// unwrapURL drops net/http's "Post "http://…/v1/run": " prefix: the
// message names the agent already.
func unwrapURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
