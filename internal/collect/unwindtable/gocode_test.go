package unwindtable

import (
	"os"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestGoCodeByFramePointers: in a Go binary (this test's own), Go
// functions unwind by the frame-pointer chain and the runtime's top frames
// stop the walk; .debug_frame's SP rules are not used for them.
func TestGoCodeByFramePointers(t *testing.T) {
	exe, _ := os.Executable()
	f := testutil.OpenELF(t, exe)
	tab, err := BuildELF(f)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Stats.GoFuncs < 1000 || tab.Stats.GoTopFrames < 3 {
		t.Fatalf("stats %+v: want the Go functions and the top frames", tab.Stats)
	}
	// The test binary is stripped of its symbol table: the pclntab names
	// the functions, as it does for the walker.
	want := map[string]Rule{
		"runtime.goexit": {Kind: KindStop}, "runtime.mstart": {Kind: KindStop},
		"runtime.mallocgc": goFrameRule, "runtime.systemstack": {Kind: KindFPSwitch},
		"runtime.mcall": {Kind: KindStop}, "testing.tRunner": goFrameRule,
	}
	found := 0
	for _, fn := range GoFuncs(f) {
		r, ok := want[fn.Name]
		if !ok {
			continue
		}
		found++
		for _, pc := range []uint64{fn.Entry, (fn.Entry + fn.End) / 2, fn.End - 1} {
			if got := tab.Lookup(pc).Rule; got != r {
				t.Errorf("%s at %#x: rule %+v, want %+v", fn.Name, pc, got, r)
			}
		}
	}
	if found < len(want) {
		t.Errorf("found %d of the functions checked in the symbol table", found)
	}
}
