package unwindtable

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/diskcache"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestBuildCost measures what building a table costs (wall time, bytes
// allocated, heap retained by the table) for libc and python3, and the table's
// size in both wire forms. The figures in docs/unwinding.md come from
//
//	flock /tmp/sonde-priv.lock go test -count=1 -run TestBuildCost -v ./internal/collect/unwindtable
//
// The bounds are loose: they catch a pathological regression, not noise.
func TestBuildCost(t *testing.T) {
	for _, path := range []string{libcX86, python311, "/usr/aarch64-linux-gnu/lib/libc.so.6"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		best := time.Duration(1 << 62)
		var alloc, retained uint64
		var tab *Table
		for i := 0; i < 3; i++ {
			tab = nil
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			tab = buildFile(t, path)
			d := time.Since(start)
			runtime.GC()
			runtime.ReadMemStats(&after)
			if d < best {
				best = d
			}
			alloc = after.TotalAlloc - before.TotalAlloc
			retained = after.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(tab)
		}
		var d Rules
		if _, _, err := tab.Compact(&d); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s (%s): %d FDEs → %d rows (%d before merging, %d unsupported); build %v, %.1f MB allocated, %.2f MB retained; rows %d KB (12 B), compact %d KB (6 B) + %d rules (%d B)",
			path, tab.Arch, tab.Stats.FDEs, len(tab.Rows), tab.Stats.RawRows, tab.Stats.Unsupported,
			best.Round(time.Millisecond), float64(alloc)/1e6, float64(retained)/1e6,
			tab.Bytes()/1024, len(tab.Rows)*CompactRowSize/1024, d.Len(), d.Len()*RuleSize)
		if best > 5*time.Second || alloc > 500<<20 {
			t.Errorf("%s: build took %v and %d bytes", path, best, alloc)
		}
	}
}

// TestMachineTableCost measures what the tables of every file mapped
// executable by this machine's processes cost (what a system-wide run
// builds as it meets them): built with an empty disk cache (and written
// to it), then read back by a second cache (the next run). Figures for
// docs/unwinding.md, under the lock:
//
//	flock /tmp/sonde-priv.lock go test -count=1 -run TestMachineTableCost -v ./internal/collect/unwindtable
func TestMachineTableCost(t *testing.T) {
	testutil.RequirePrivileged(t)
	var paths []string
	seen := map[string]bool{}
	des, _ := os.ReadDir("/proc")
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		ms, err := procfs.ReadMaps(pid)
		if err != nil {
			continue
		}
		for _, m := range ms {
			if !m.Exec() || !strings.HasPrefix(m.Path, "/") || seen[m.Path] {
				continue
			}
			seen[m.Path] = true
			paths = append(paths, fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End))
		}
	}
	disk := func() *diskcache.Cache {
		d, err := diskcache.Open(diskcache.Options{Dir: filepath.Join(t.TempDir(), "c"), Generation: "cost"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	dir := disk()
	pass := func(c *Cache) (time.Duration, int) {
		start := time.Now()
		rows := 0
		for _, p := range paths {
			if tab, _, err := c.Get(p); err == nil {
				rows += len(tab.Rows)
			}
		}
		return time.Since(start), rows
	}
	cold := NewCache().WithDisk(dir)
	tc, rows := pass(cold)
	again, err := diskcache.Open(diskcache.Options{Dir: dir.Dir(), Generation: "cost"})
	if err != nil {
		t.Fatal(err)
	}
	warm := NewCache().WithDisk(again)
	tw, _ := pass(warm)
	off := NewCache()
	to, _ := pass(off)
	var bytes int64
	ents, _ := os.ReadDir(dir.Dir())
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			bytes += fi.Size()
		}
	}
	t.Logf("%d files mapped executable (%d distinct tables, %d rows): cold %v (built and written: %+v), warm %v (read back: %+v), no disk cache %v; %d entries, %.1f MB on disk",
		len(paths), cold.Stats().Files, rows, tc.Round(time.Millisecond), cold.Stats(), tw.Round(time.Millisecond), warm.Stats(), to.Round(time.Millisecond), len(ents), float64(bytes)/1e6)
	if warm.Stats().Builds != 0 {
		t.Errorf("the second pass built %d tables", warm.Stats().Builds)
	}
}
