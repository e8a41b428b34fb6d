// Package debuginfod fetches debug files by build-id from debuginfod
// servers (elfutils' protocol: GET URL/buildid/ID/debuginfo), the way
// gdb, perf and elfutils' own client do, sharing their cache: the same
// environment (DEBUGINFOD_URLS, DEBUGINFOD_TIMEOUT, DEBUGINFOD_CACHE_PATH)
// and the same layout (CACHE/ID/debuginfo, misses as empty files with no
// permissions, kept for CACHE/cache_miss_s seconds), so a file one of them
// downloaded is not downloaded again by another.
package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound says no server has the file (or a recent miss is cached).
var ErrNotFound = errors.New("not found on any debuginfod server")

// defaultMiss is how long a miss is believed without asking again:
// elfutils' default for cache_miss_s.
const defaultMiss = 600 * time.Second

// defaultTimeout bounds one fetch when DEBUGINFOD_TIMEOUT is unset:
// elfutils waits 90 s; a profiler's report should not.
const defaultTimeout = 30 * time.Second

// maxFile bounds one download (a debug file of a large program is a few
// hundred MB; anything larger is more likely a misbehaving server).
const maxFile = 4 << 30

// Client fetches debug files. Its zero value fetches nothing; use FromEnv
// or set URLs and CacheDir.
type Client struct {
	URLs     []string      // server URL prefixes, asked together, the first answer wins
	CacheDir string        // elfutils' layout
	Timeout  time.Duration // per fetch, all servers together
	HTTP     *http.Client  // nil: http.DefaultClient's transport with Timeout

	mu     sync.Mutex
	got    []string // what was fetched: "NAME (SIZE)"
	missed int      // build-ids no server has
	failed []string // servers that did not answer, once each
	dead   map[string]bool
}

// FromEnv returns a client configured as elfutils' client would be from
// the environment, or nil when DEBUGINFOD_URLS names no server.
func FromEnv() *Client {
	urls := strings.Fields(os.Getenv("DEBUGINFOD_URLS"))
	var keep []string
	for _, u := range urls {
		if strings.HasPrefix(u, "ima:") { // a signature policy tag, not a server
			continue
		}
		keep = append(keep, strings.TrimRight(u, "/"))
	}
	if len(keep) == 0 {
		return nil
	}
	c := &Client{URLs: keep, CacheDir: CacheDir(), Timeout: defaultTimeout}
	if s := os.Getenv("DEBUGINFOD_TIMEOUT"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			c.Timeout = time.Duration(n) * time.Second
		}
	}
	return c
}

// CacheDir is the cache elfutils' client uses: DEBUGINFOD_CACHE_PATH, the
// legacy ~/.debuginfod_client_cache when it exists, else
// $XDG_CACHE_HOME/debuginfod_client (~/.cache/debuginfod_client).
func CacheDir() string {
	if p := os.Getenv("DEBUGINFOD_CACHE_PATH"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		legacy := filepath.Join(home, ".debuginfod_client_cache")
		if st, err := os.Stat(legacy); err == nil && st.IsDir() {
			return legacy
		}
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "debuginfod_client")
	}
	if home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "debuginfod_client")
}

var buildIDPattern = regexp.MustCompile(`^[0-9a-f]{2,128}$`)

// Debuginfo returns the path of the debug file of buildID (lower-case
// hex), from the cache or fetched into it; name (the binary's path) is
// only for the summary.
func (c *Client) Debuginfo(ctx context.Context, buildID, name string) (string, error) {
	return c.fetch(ctx, buildID, "debuginfo", name)
}

// Executable returns the path of the executable or library of buildID.
func (c *Client) Executable(ctx context.Context, buildID, name string) (string, error) {
	return c.fetch(ctx, buildID, "executable", name)
}

func (c *Client) fetch(ctx context.Context, buildID, kind, name string) (string, error) {
	if c == nil || len(c.URLs) == 0 {
		return "", ErrNotFound
	}
	if !buildIDPattern.MatchString(buildID) {
		return "", fmt.Errorf("debuginfod: build-id %q is not lower-case hex", buildID)
	}
	dir := filepath.Join(c.CacheDir, buildID)
	target := filepath.Join(dir, kind)
	if st, err := os.Stat(target); err == nil {
		if st.Size() > 0 || st.Mode().Perm() != 0 {
			return target, nil
		}
		if time.Since(st.ModTime()) < c.missTTL() {
			return "", ErrNotFound
		}
		os.Remove(target) // an old miss: ask again
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("debuginfod cache: %w", err)
	}
	size, err := c.download(ctx, buildID, kind, target)
	switch {
	case errors.Is(err, ErrNotFound):
		c.noteMiss(target)
		return "", err
	case err != nil:
		return "", err
	}
	c.mu.Lock()
	c.got = append(c.got, fmt.Sprintf("%s (%s)", filepath.Base(name), sizeText(size)))
	c.mu.Unlock()
	return target, nil
}

// download asks every server at once and keeps the first complete
// answer, written to a temporary file and renamed into place so no reader
// ever sees part of a file.
func (c *Client) download(ctx context.Context, buildID, kind, target string) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		tmp  string
		size int64
		err  error
		url  string
	}
	urls := c.live()
	if len(urls) == 0 {
		return 0, errors.New("debuginfod: no server answered earlier in this run")
	}
	answers := make(chan answer, len(urls))
	for _, u := range urls {
		go func(u string) {
			tmp, size, err := c.get(ctx, u+"/buildid/"+buildID+"/"+kind, filepath.Dir(target))
			answers <- answer{tmp, size, err, u}
		}(u)
	}
	var firstErr error
	notFound := 0
	won := false
	var size int64
	for range urls {
		a := <-answers
		switch {
		case a.err == nil && !won:
			if err := os.Rename(a.tmp, target); err != nil {
				os.Remove(a.tmp)
				firstErr = fmt.Errorf("debuginfod cache: %w", err)
				continue
			}
			won, size = true, a.size
			cancel() // the others can stop
		case a.err == nil:
			os.Remove(a.tmp)
		case errors.Is(a.err, ErrNotFound):
			notFound++
		default:
			if !won && !errors.Is(a.err, context.Canceled) {
				c.noteFailed(a.url, a.err)
				if firstErr == nil {
					firstErr = a.err
				}
			}
		}
	}
	if won {
		return size, nil
	}
	if notFound == len(urls) {
		return 0, ErrNotFound
	}
	if firstErr == nil {
		firstErr = ErrNotFound
	}
	return 0, firstErr
}

// get fetches url into a new temporary file in dir.
func (c *Client) get(ctx context.Context, url, dir string) (string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, fmt.Errorf("debuginfod: %w", err)
	}
	req.Header.Set("User-Agent", "sonde")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("debuginfod: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return "", 0, ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return "", 0, fmt.Errorf("debuginfod: %s: %s", url, resp.Status)
	}
	f, err := os.CreateTemp(dir, ".sonde-*")
	if err != nil {
		return "", 0, fmt.Errorf("debuginfod cache: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, maxFile+1))
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("debuginfod: %s: %d of %d bytes", url, n, resp.ContentLength)
	}
	if err == nil && n > maxFile {
		err = fmt.Errorf("debuginfod: %s: larger than %s", url, sizeText(maxFile))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, err
	}
	return f.Name(), n, nil
}

// missTTL is how long a cached miss holds: CACHE/cache_miss_s, which
// elfutils' client also reads.
func (c *Client) missTTL() time.Duration {
	b, err := os.ReadFile(filepath.Join(c.CacheDir, "cache_miss_s"))
	if err != nil {
		return defaultMiss
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return defaultMiss
	}
	return time.Duration(n) * time.Second
}

// noteMiss records that no server has target, as an empty file without
// permissions (elfutils' marker), so the next run does not ask again.
func (c *Client) noteMiss(target string) {
	if f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0); err == nil {
		f.Close()
		os.Chmod(target, 0) // past the umask
	}
	c.mu.Lock()
	c.missed++
	c.mu.Unlock()
}

// live lists the servers not given up on: one that did not answer is not
// asked again in this run, so a host without a network pays one timeout,
// not one per binary.
func (c *Client) live() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, u := range c.URLs {
		if !c.dead[u] {
			out = append(out, u)
		}
	}
	return out
}

func (c *Client) noteFailed(url string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead == nil {
		c.dead = map[string]bool{}
	}
	c.dead[url] = true
	for _, f := range c.failed {
		if strings.HasPrefix(f, url+" ") {
			return
		}
	}
	c.failed = append(c.failed, url+" ("+short(err)+")")
}

// Summary is one line saying what this client fetched and what it could
// not, "" when it was not asked anything.
func (c *Client) Summary() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	if len(c.got) > 0 {
		got := append([]string(nil), c.got...)
		sort.Strings(got)
		parts = append(parts, "fetched debug info for "+strings.Join(got, ", "))
	}
	if c.missed > 0 {
		parts = append(parts, fmt.Sprintf("%d build-id(s) not on any server", c.missed))
	}
	if len(c.failed) > 0 {
		parts = append(parts, "no answer from "+strings.Join(c.failed, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "debuginfod: " + strings.Join(parts, "; ")
}

func short(err error) string {
	var ue interface{ Unwrap() error }
	for errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	s := err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		s = "no such file"
	}
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
