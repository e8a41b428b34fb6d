package model

import "testing"

func TestSrcLine(t *testing.T) {
	p := &Profile{
		DSOs:  []DSO{{Name: "[kernel.kallsyms]", Kind: DSOKernel}, {Name: "/usr/bin/app", Kind: DSOUser}},
		Funcs: []Func{{Name: "vfs_write", DSO: 0, Start: 0xffffffff81400000, Size: 0x200}, {Name: "[sonde] --", DSO: 1}},
		Files: []string{"app.c"},
		Locs: []Loc{
			{DSO: 0, Addr: 0xffffffff81400067, Func: 0, File: -1},
			{DSO: 1, Addr: 0x1203, Func: -1, File: 0, Line: 12},
			{DSO: 1, Addr: 0x1203, Func: -1, File: -1},
			{DSO: 1, Func: 1, File: -1},
		},
	}
	for i, want := range []string{"vfs_write+0x67", "app.c:12", "app+0x1203", "[sonde] --"} {
		if got := p.SrcLine(int32(i)); got != want {
			t.Errorf("loc %d: %q, want %q", i, got, want)
		}
	}
}
