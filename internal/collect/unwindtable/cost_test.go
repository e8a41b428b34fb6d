package unwindtable

import (
	"os"
	"runtime"
	"testing"
	"time"
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
