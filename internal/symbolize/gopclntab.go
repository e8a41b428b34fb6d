package symbolize

import (
	"debug/elf"
	"debug/gosym"
)

// goFuncSymbols names the functions of a Go binary from its pclntab, for
// binaries linked without a symbol table (-ldflags=-s -w, as release
// builds and sonde's own are): the runtime needs the pclntab to walk its
// stacks, so no strip removes it. nil when there is none or it does not
// parse.
func goFuncSymbols(f *elf.File) []elf.Symbol {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil || pcln.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	out := make([]elf.Symbol, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		if fn.End <= fn.Entry {
			continue
		}
		out = append(out, elf.Symbol{Name: fn.Name, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Value: fn.Entry, Size: fn.End - fn.Entry})
	}
	return out
}
