package symbolize

import (
	"debug/elf"
	"debug/gosym"
	"os"
	"testing"
)

// The pclntab's positions, read by goLineTable, are debug/gosym's for
// every instruction of a Go binary's functions (this test's own binary).
func TestGoLineTableAgainstGosym(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := newGoLineTable(f)
	if g == nil {
		t.Fatal("no Go 1.18+ pclntab read from the test binary")
	}
	data, _ := f.Section(".gopclntab").Data()
	ref, err := gosym.NewTable(nil, gosym.NewLineTable(data, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, fn := range ref.Funcs {
		if i%7 != 0 { // every seventh function: each instruction of each
			continue
		}
		rows := g.rows(fn.Entry, fn.End)
		r := 0
		for pc := fn.Entry; pc < fn.End; pc++ {
			for r+1 < len(rows) && rows[r+1].Addr <= pc {
				r++
			}
			file, line, _ := ref.PCToLine(pc)
			got, gotLine := "", 0
			if len(rows) > 0 && rows[r].Addr <= pc {
				got, gotLine = rows[r].File, rows[r].Line
			}
			if line > 0 && (got != file || gotLine != line) {
				t.Fatalf("%s+%#x: rows say %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, got, gotLine, file, line)
			}
			if pc == fn.Entry || pc%61 == 0 {
				lf, ll, ok := g.line(pc)
				if line > 0 && (!ok || lf != file || ll != line) {
					t.Fatalf("%s+%#x: line says %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, lf, ll, file, line)
				}
			}
			checked++
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d instructions checked", checked)
	}
	t.Logf("%d addresses of %d functions agree with debug/gosym", checked, len(ref.Funcs)/7)
	if g.covers(0) || !g.covers(ref.Funcs[0].Entry) {
		t.Errorf("covers: wrong about address 0 or the first function")
	}
}
