// Package modeltest builds small, fixed profiles for tests of the views and
// the data file, so they run without root and give stable golden output.
package modeltest

import "github.com/sonde-dev/sonde/internal/model"

// Sample returns a profile of one process "work" whose main calls spin_a and
// spin_b (3:1), with a write(2) path through the kernel and an unnamed frame.
func Sample() *model.Profile {
	p := &model.Profile{
		Meta: model.Meta{
			Event: "cpu-clock", Freq: 997, Callchain: true, Target: "command",
			Command: []string{"./work", "600"}, Hostname: "test", Kernel: "6.18.0", Arch: "amd64",
			StartUnixNS: 1_700_000_000_000_000_000, DurationNS: 2_000_000_000, Lost: 3, SondeVersion: "test", Unwinder: "fp",
		},
		Threads: []model.Thread{{Pid: 100, Tid: 100, Comm: "work"}, {Pid: 100, Tid: 101, Comm: "work"}},
		DSOs: []model.DSO{
			{Name: "/tmp/work", BuildID: "abcd", Kind: model.DSOUser},
			{Name: "/usr/lib/x86_64-linux-gnu/libc.so.6", BuildID: "ef01", Kind: model.DSOUser},
			{Name: "[kernel.kallsyms]", Kind: model.DSOKernel},
		},
		Funcs: []model.Func{
			{Name: "main", DSO: 0, Start: 0x1100, Size: 0x80},
			{Name: "spin_a", DSO: 0, Start: 0x1200, Size: 0x40},
			{Name: "spin_b", DSO: 0, Start: 0x1240, Size: 0x40},
			{Name: "__libc_start_call_main", DSO: 1, Start: 0x29d10, Size: 0xa0},
			{Name: "write", DSO: 1, Start: 0x10e280, Size: 0x90},
			{Name: "ksys_write", DSO: 2, Start: 0xffffffff81300000},
			{Name: "do_syscall_64", DSO: 2, Start: 0xffffffff81a00000},
		},
		Files: []string{"/src/work.c"},
		Locs: []model.Loc{
			{DSO: 0, Addr: 0x1110, Func: 0, File: 0, Line: 30},    // 0 main
			{DSO: 0, Addr: 0x1210, Func: 1, File: 0, Line: 12},    // 1 spin_a
			{DSO: 0, Addr: 0x1250, Func: 2, File: 0, Line: 20},    // 2 spin_b
			{DSO: 1, Addr: 0x29d90, Func: 3, File: -1},            // 3 libc start
			{DSO: 1, Addr: 0x10e2a0, Func: 4, File: -1},           // 4 write
			{DSO: 2, Addr: 0xffffffff81300010, Func: 5, File: -1}, // 5 ksys_write
			{DSO: 2, Addr: 0xffffffff81a00020, Func: 6, File: -1}, // 6 do_syscall_64
			{DSO: 0, Addr: 0x5000, Func: -1, File: -1},            // 7 unnamed
			{DSO: 0, Addr: 0x1214, Func: 1, File: 0, Line: 13},    // 8 spin_a, other line
		},
		Stacks: [][]int32{
			{1, 0, 3},       // spin_a
			{2, 0, 3},       // spin_b
			{5, 6, 4, 0, 3}, // write in the kernel
			{7, 0, 3},       // unnamed
			{8, 0, 3},       // spin_a line 13
		},
	}
	add := func(thread, stack int32, n int) {
		for i := 0; i < n; i++ {
			t := uint64(len(p.Samples)) * 1_003_009
			p.Samples = append(p.Samples, model.Sample{Time: t, Thread: thread, CPU: uint32(i % 2), Stack: stack, Period: 1_003_009})
		}
	}
	add(0, 0, 500)
	add(1, 4, 100)
	add(0, 1, 200)
	add(0, 2, 20)
	add(1, 3, 10)
	return p
}
