package main

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/symbolize"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestDebuginfodNamesAStrippedBinary: a stripped binary whose debug file
// only elfutils' debuginfod serves (on loopback) is named in a recording,
// with its hot source line; a second recording with the server stopped is
// named from the cache; with no server at all, one line says so and the
// run succeeds.
func TestDebuginfodNamesAStrippedBinary(t *testing.T) {
	testutil.RequireTool(t, "debuginfod", "debuginfod")
	testutil.RequireTool(t, "objcopy", "binutils")
	dir, full := testutil.Workload(t, "work", []string{"work.c"})
	srv := mkdir(t, dir, "srv")
	bin := filepath.Join(dir, "ledger")
	for _, args := range [][]string{
		{"objcopy", "--only-keep-debug", full, filepath.Join(srv, "work.debug")},
		{"strip", "-s", "-o", bin, full},
	} {
		if b, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
	}
	e, err := symbolize.OpenELF(bin, symbolize.Options{NoLines: true})
	if err != nil || e.BuildID == "" {
		t.Fatalf("stripped binary: %v, build-id %q", err, e.BuildID)
	}
	for _, s := range e.Symbols() {
		if s.Name == "spin_a" {
			t.Fatal("the stripped binary still names spin_a itself")
		}
	}
	url, stop := startDebuginfod(t, srv, dir, e.BuildID)
	t.Setenv("DEBUGINFOD_URLS", url)
	t.Setenv("DEBUGINFOD_CACHE_PATH", filepath.Join(dir, "cache"))

	named := func(data string) {
		t.Helper()
		rep := reportJSON(t, dir, "-i", data, "--no-children", "--sort", "sym")
		if a, b := selfPct(rep, "spin_a"), selfPct(rep, "spin_b"); a+b < 50 {
			t.Fatalf("%s: spin_a %.1f%% + spin_b %.1f%%, want most samples named: %+v", data, a, b, rep.Entries)
		}
		src := reportJSON(t, dir, "-i", data, "--no-children", "--sort", "srcline")
		if len(src.Entries) == 0 || !strings.Contains(src.Entries[0].Keys["srcline"], "work.c:") {
			t.Fatalf("%s: hottest source line %+v, want one of work.c", data, src.Entries[:min(3, len(src.Entries))])
		}
	}
	r := testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "a.data", "--", bin, "0.5s")
	if !strings.Contains(r.Stderr, "debuginfod: fetched debug info for ledger") {
		t.Errorf("record does not say what it fetched:\n%s", r.Stderr)
	}
	named("a.data")

	stop()
	r = testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "b.data", "--", bin, "0.5s")
	if strings.Contains(r.Stderr, "debuginfod") {
		t.Errorf("the cached file was asked for again:\n%s", r.Stderr)
	}
	named("b.data")

	// No server from the start, an empty cache: named nothing, said once.
	t.Setenv("DEBUGINFOD_CACHE_PATH", filepath.Join(dir, "cache2"))
	r = testutil.MustRun(t, dir, "record", "-q", "-g", "-o", "c.data", "--", bin, "0.3s")
	if n := strings.Count(r.Stderr, "debuginfod:"); n != 1 || !strings.Contains(r.Stderr, "no answer from "+url) {
		t.Errorf("with the server down, %d debuginfod lines, want one naming %s:\n%s", n, url, r.Stderr)
	}
	// --no-debuginfod asks nobody.
	r = testutil.MustRun(t, dir, "record", "-q", "-g", "--no-debuginfod", "-o", "d.data", "--", bin, "0.3s")
	if strings.Contains(r.Stderr, "debuginfod") {
		t.Errorf("--no-debuginfod still asked:\n%s", r.Stderr)
	}
}

// startDebuginfod serves dir's debug files on a loopback port and waits
// until the server has indexed id; stop ends it (idempotent).
func startDebuginfod(t *testing.T, dir, tmp, id string) (url string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("debuginfod", "-F", dir, "-p", fmt.Sprint(port), "-d", filepath.Join(tmp, "db.sqlite"))
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if !done {
			done = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url + "/buildid/" + id + "/debuginfo")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debuginfod did not serve %s within 60 s:\n%s", id, log.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the server's readiness
	}
}
