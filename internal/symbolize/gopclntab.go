package symbolize

import (
	"debug/elf"

	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
)

// goFuncSymbols names the functions of a Go binary from its pclntab, for
// binaries linked without a symbol table (-ldflags=-s -w, as release
// builds and sonde's own are): the runtime needs the pclntab to walk its
// stacks, so no strip removes it. nil when there is none or it does not
// parse.
func goFuncSymbols(f *elf.File) []elf.Symbol {
	fns := unwindtable.GoFuncs(f)
	out := make([]elf.Symbol, 0, len(fns))
	for _, fn := range fns {
		if fn.End <= fn.Entry {
			continue
		}
		out = append(out, elf.Symbol{Name: fn.Name, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Value: fn.Entry, Size: fn.End - fn.Entry})
	}
	return out
}
