package debuginfod

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const id = "0123456789abcdef0123456789abcdef01234567"

// server serves files by build-id, counting requests; cut makes it promise
// more bytes than it sends.
func server(t *testing.T, files map[string]string, cut bool) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if cut {
			w.Header().Set("Content-Length", "1000000")
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func TestFetchCachesInElfutilsLayout(t *testing.T) {
	s, n := server(t, map[string]string{"/buildid/" + id + "/debuginfo": "DEBUG"}, false)
	c := &Client{URLs: []string{s.URL}, CacheDir: t.TempDir()}
	p, err := c.Debuginfo(context.Background(), id, "/usr/bin/prog")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.CacheDir, id, "debuginfo"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	if b, _ := os.ReadFile(p); string(b) != "DEBUG" {
		t.Fatalf("cached %q", b)
	}
	s.Close() // the cache answers now
	if p2, err := c.Debuginfo(context.Background(), id, "prog"); err != nil || p2 != p || n.Load() != 1 {
		t.Fatalf("second fetch: %q %v after %d requests", p2, err, n.Load())
	}
	if got := c.Summary(); !strings.Contains(got, "fetched debug info for prog (5 B)") {
		t.Fatalf("summary %q", got)
	}
}

func TestMissIsCachedLikeElfutils(t *testing.T) {
	s, n := server(t, nil, false)
	c := &Client{URLs: []string{s.URL}, CacheDir: t.TempDir()}
	for i := 0; i < 3; i++ {
		if _, err := c.Debuginfo(context.Background(), id, "prog"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("run %d: %v, want not found", i, err)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("%d requests for one missing build-id, want 1 (the miss cached)", n.Load())
	}
	st, err := os.Stat(filepath.Join(c.CacheDir, id, "debuginfo"))
	if err != nil || st.Size() != 0 || st.Mode().Perm() != 0 {
		t.Fatalf("miss marker: %v %v", st, err)
	}
	// cache_miss_s 0: the miss is old at once, the server is asked again.
	os.WriteFile(filepath.Join(c.CacheDir, "cache_miss_s"), []byte("0\n"), 0o644)
	c.Debuginfo(context.Background(), id, "prog")
	if n.Load() != 2 {
		t.Fatalf("%d requests with cache_miss_s 0, want 2", n.Load())
	}
	if got := c.Summary(); !strings.Contains(got, "not on any server") {
		t.Fatalf("summary %q", got)
	}
}

func TestServerDownIsNotCachedAsMiss(t *testing.T) {
	s, _ := server(t, nil, false)
	url := s.URL
	s.Close()
	c := &Client{URLs: []string{url}, CacheDir: t.TempDir(), Timeout: 5 * time.Second}
	_, err := c.Debuginfo(context.Background(), id, "prog")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("server down: %v, want a connection error", err)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir, id, "debuginfo")); err == nil {
		t.Fatal("a server that did not answer was cached as a miss")
	}
	if got := c.Summary(); !strings.Contains(got, "no answer from "+url) {
		t.Fatalf("summary %q", got)
	}
}

func TestCutDownloadLeavesNothing(t *testing.T) {
	s, _ := server(t, map[string]string{"/buildid/" + id + "/debuginfo": "PART"}, true)
	c := &Client{URLs: []string{s.URL}, CacheDir: t.TempDir()}
	if _, err := c.Debuginfo(context.Background(), id, "prog"); err == nil {
		t.Fatal("a cut download was accepted")
	}
	ents, _ := os.ReadDir(filepath.Join(c.CacheDir, id))
	if len(ents) != 0 {
		t.Fatalf("left in the cache: %v", ents)
	}
}

func TestFirstServerWithTheFileWins(t *testing.T) {
	empty, _ := server(t, nil, false)
	full, _ := server(t, map[string]string{"/buildid/" + id + "/executable": "EXE"}, false)
	c := &Client{URLs: []string{empty.URL, full.URL}, CacheDir: t.TempDir()}
	p, err := c.Executable(context.Background(), id, "prog")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "EXE" {
		t.Fatalf("got %q", b)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	if FromEnv() != nil {
		t.Fatal("a client without servers")
	}
	t.Setenv("DEBUGINFOD_URLS", "http://a/ ima:enforcing https://b")
	t.Setenv("DEBUGINFOD_TIMEOUT", "7")
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/x/cache")
	c := FromEnv()
	if strings.Join(c.URLs, " ") != "http://a https://b" || c.Timeout != 7*time.Second || c.CacheDir != "/x/cache" {
		t.Fatalf("%+v", c)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	t.Setenv("HOME", t.TempDir())
	if got := CacheDir(); got != "/xdg/debuginfod_client" {
		t.Fatalf("cache dir %s", got)
	}
}

func TestBadBuildID(t *testing.T) {
	c := &Client{URLs: []string{"http://127.0.0.1:1"}, CacheDir: t.TempDir()}
	if _, err := c.Debuginfo(context.Background(), "../../etc", "x"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("%v", err)
	}
}
