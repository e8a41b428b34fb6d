package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// VDSO loads this process's vDSO image; it is the same for every process on
// this kernel, so it names [vdso] frames of any process.
func VDSO() (*ELF, uint64, error) {
	maps, err := procfs.ReadMaps(os.Getpid())
	if err != nil {
		return nil, 0, err
	}
	for _, m := range maps {
		if m.Path != "[vdso]" {
			continue
		}
		f, err := os.Open("/proc/self/mem")
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		buf := make([]byte, m.End-m.Start)
		if _, err := f.ReadAt(buf, int64(m.Start)); err != nil {
			return nil, 0, fmt.Errorf("reading vdso: %w", err)
		}
		ef, err := elf.NewFile(strings.NewReader(string(buf)))
		if err != nil {
			return nil, 0, fmt.Errorf("parsing vdso: %w", err)
		}
		e := &ELF{Path: "[vdso]", Type: ef.Type, BuildID: buildID(ef)}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD {
				e.loads = append(e.loads, p.ProgHeader)
			}
		}
		e.syms = NewSymbolTable(oneNamePerAddress(readFuncs(ef)))
		return e, m.Start, nil
	}
	return nil, 0, fmt.Errorf("no [vdso] mapping")
}
