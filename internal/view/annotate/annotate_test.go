package annotate

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// fixture is a profile of one hand-assembled function: a counting loop,
// with samples on the loop and line rows for three source lines.
func fixture(arch string) *model.Profile {
	p := &model.Profile{
		Meta:    model.Meta{Event: "cpu-clock", Arch: arch},
		Threads: []model.Thread{{Pid: 1, Tid: 1, Comm: "loop"}},
		DSOs:    []model.DSO{{Name: "/bin/loop", Kind: model.DSOUser}},
		Files:   []string{"/src/loop.c"},
	}
	var code []byte
	var hot [3]uint64 // addresses: loop body, compare, branch
	switch arch {
	case "amd64":
		// push %rbp; mov %rsp,%rbp; xor %eax,%eax; L: inc %eax; cmp $0xa,%eax; jne L; pop %rbp; ret
		code = []byte{0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0x5d, 0xc3}
		hot = [3]uint64{0x1006, 0x1008, 0x100b}
	case "arm64":
		// mov w0, #0; L: add w0, w0, #1; cmp w0, #10; b.ne L; ret
		code = []byte{0x00, 0x00, 0x80, 0x52, 0x00, 0x04, 0x00, 0x11, 0x1f, 0x28, 0x00, 0x71, 0xc1, 0xff, 0xff, 0x54, 0xc0, 0x03, 0x5f, 0xd6}
		hot = [3]uint64{0x1004, 0x1008, 0x100c}
	}
	p.Funcs = []model.Func{{Name: "count", DSO: 0, Start: 0x1000, Size: uint64(len(code))}}
	p.Code = []model.Code{{Func: 0, Arch: arch, Bytes: code, Lines: []model.LineRow{
		{Addr: 0x1000, File: 0, Line: 3}, {Addr: hot[0], File: 0, Line: 5}, {Addr: hot[2], File: 0, Line: 4}, {Addr: hot[2] + 2, File: 0, Line: 7},
	}}}
	for i, a := range hot {
		p.Locs = append(p.Locs, model.Loc{DSO: 0, Addr: a, Func: 0, File: 0, Line: int32(5 - i%2)})
		p.Stacks = append(p.Stacks, []int32{int32(i)})
	}
	for i, n := range []int{60, 30, 10} {
		for j := 0; j < n; j++ {
			p.Samples = append(p.Samples, model.Sample{Thread: 0, Stack: int32(i), Period: 1})
		}
	}
	return p
}

func TestAnnotateGolden(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			p := fixture(arch)
			funcs, err := Build(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			WriteText(&buf, p, funcs, Options{AsmRaw: true})
			testutil.Golden(t, filepath.Join("testdata", arch+".golden"), buf.Bytes())
			if funcs[0].Insns[0].IsTarget || !hasTarget(funcs[0].Insns) {
				t.Errorf("jump target not marked: %+v", funcs[0].Insns)
			}
		})
	}
}

func hasTarget(in []Insn) bool {
	for _, i := range in {
		if i.IsTarget {
			return true
		}
	}
	return false
}

func TestAnnotateErrors(t *testing.T) {
	p := fixture("amd64")
	if _, err := Build(p, Options{Symbol: "nope"}); err == nil {
		t.Error("unknown symbol accepted")
	}
	p.Code[0].Arch = "mips"
	if _, err := Build(p, Options{Symbol: "count"}); err == nil {
		t.Error("unknown architecture accepted")
	}
}
