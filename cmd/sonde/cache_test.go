package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestTableCacheReused: a second run reads the unwind tables the first
// one built from the disk cache (and builds none), and its stacks are
// the first run's: the same distinct stacks carry the samples, split
// 3:1 between heavy and light as testdata/unwind.c does.
func TestTableCacheReused(t *testing.T) {
	dir, builds := unwindBuilds(t, "no-fp")
	testutil.Sonde(t) // built before the workloads start, so that they outlive the build
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "SONDE_CACHE=on"}
	type tables struct {
		Built  int `json:"tables_built"`
		Cached int `json:"tables_cached"`
	}
	run := func(n int) (tables, map[string]uint64) {
		w := testutil.Start(t, builds["no-fp"], "30")
		defer w.Process.Kill()
		data := filepath.Join(dir, fmt.Sprintf("run%d.data", n))
		r := mustEnv(t, dir, env, nil, "profile", "-F", "999", "-p", strconv.Itoa(w.Process.Pid), "-d", "2s", "--user", "--json", "-o", data)
		var doc struct {
			UserStacks struct {
				Total    uint64  `json:"stacks_total"`
				Complete uint64  `json:"stacks_complete"`
				Tables   *tables `json:"unwind_tables"`
			} `json:"user_stacks"`
		}
		r.JSON(t, &doc)
		if doc.UserStacks.Tables == nil {
			t.Fatalf("run %d: no unwind_tables in user_stacks:\n%.2000s", n, r.Stdout)
		}
		u := doc.UserStacks
		if u.Total == 0 || u.Complete*100 < u.Total*95 {
			t.Errorf("run %d: %d of %d stacks complete, want ≥ 95%%", n, u.Complete, u.Total)
		}
		f := mustEnv(t, dir, env, nil, "flamegraph", "-i", data, "--format", "folded")
		st := folded(t, f.Stdout)
		checkDispatchSplit(t, fmt.Sprintf("run %d", n), st, 600, f.Stdout)
		return *u.Tables, st
	}
	t1, st1 := run(1)
	t2, st2 := run(2)
	t.Logf("run 1: %+v; run 2: %+v", t1, t2)
	if t1.Built == 0 || t1.Cached != 0 {
		t.Errorf("first run, empty cache: %d tables built, %d cached; want some built, none cached", t1.Built, t1.Cached)
	}
	if t2.Built != 0 || t2.Cached != t1.Built {
		t.Errorf("second run: %d tables built, %d cached; want 0 built, %d cached", t2.Built, t2.Cached, t1.Built)
	}
	if a, b := common(st1), common(st2); !slices.Equal(a, b) {
		t.Errorf("the stacks that carry ≥ 1%% of samples differ:\nrun 1:\n%s\nrun 2:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	des, err := os.ReadDir(filepath.Join(cache, "sonde"))
	if err != nil || len(des) != t1.Built {
		t.Errorf("cache directory: %d entries (%v), want %d", len(des), err, t1.Built)
	}
}

// common are the stacks carrying at least 1% of the samples, sorted.
func common(st map[string]uint64) []string {
	var total uint64
	for _, n := range st {
		total += n
	}
	var out []string
	for s, n := range st {
		if n*100 >= total {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// TestCacheEnvChecked: SONDE_CACHE takes on or off; anything else ends
// sonde with one line before it measures anything.
func TestCacheEnvChecked(t *testing.T) {
	r := runEnv(t, t.TempDir(), []string{"SONDE_CACHE=no"}, nil, "profile", "-d", "1")
	if r.Code != 2 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 || !strings.Contains(r.Stderr, `SONDE_CACHE="no": want on or off`) {
		t.Errorf("SONDE_CACHE=no: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
