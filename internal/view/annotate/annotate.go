// Package annotate shows where inside a function the samples fell: its
// disassembly (x86-64 and arm64 through golang.org/x/arch, no objdump) with
// per-instruction percentages, jump targets marked, source lines from
// DWARF interleaved (with the text when the file is at hand), and the
// hottest source lines. Code comes from the data file, or from the binary
// when its build-id matches.
package annotate

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// Options select what to annotate and how to print it.
type Options struct {
	Symbol   string // "" for the hottest functions
	Top      int    // hottest functions to show without Symbol
	NoSource bool
	AsmRaw   bool
}

// Insn is one instruction.
type Insn struct {
	Addr     uint64  `json:"addr"`
	Bytes    string  `json:"code_bytes,omitempty"`
	Text     string  `json:"asm"`
	Samples  uint64  `json:"samples"`
	Percent  float64 `json:"percent"` // of the function's samples
	Target   uint64  `json:"jump_target,omitempty"`
	IsTarget bool    `json:"is_jump_target,omitempty"`
	File     string  `json:"file,omitempty"`
	Line     int     `json:"line,omitempty"`
}

// LineStat is the samples of one source line.
type LineStat struct {
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"`
}

// Func is one annotated function.
type Func struct {
	Name       string     `json:"function"`
	DSO        string     `json:"dso"`
	Start      uint64     `json:"addr"`
	Samples    uint64     `json:"samples"`
	Percent    float64    `json:"percent_of_total"`
	Arch       string     `json:"arch"`
	Insns      []Insn     `json:"instructions"`
	HotLines   []LineStat `json:"hot_lines"`
	CodeSource string     `json:"code_from"` // "data file" or "binary"
}

// Build annotates the functions o selects.
func Build(p *model.Profile, o Options) ([]Func, error) {
	if o.Top == 0 {
		o.Top = 3
	}
	// Self samples per function and per leaf address.
	perFunc := map[int32]uint64{}
	perAddr := map[int32]map[uint64]uint64{}
	var total uint64
	for _, g := range p.SampleGroups() {
		total += g.Count
		st := p.Stacks[g.Stack]
		if len(st) == 0 {
			continue
		}
		l := p.Locs[st[0]]
		if l.Func < 0 {
			continue
		}
		perFunc[l.Func] += g.Count
		if perAddr[l.Func] == nil {
			perAddr[l.Func] = map[uint64]uint64{}
		}
		perAddr[l.Func][l.Addr] += g.Count
	}
	code := map[int32]*model.Code{}
	for i := range p.Code {
		code[p.Code[i].Func] = &p.Code[i]
	}
	var ids []int32
	if o.Symbol != "" {
		var names []string
		for i, f := range p.Funcs {
			if f.Name == o.Symbol {
				ids = append(ids, int32(i))
			}
			if perFunc[int32(i)] > 0 {
				names = append(names, f.Name)
			}
		}
		if len(ids) == 0 {
			sort.Strings(names)
			return nil, fmt.Errorf("no sampled function %q (sampled: %s)", o.Symbol, strings.Join(first(names, 8), ", "))
		}
	} else {
		for id := range perFunc {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool {
			if perFunc[ids[i]] != perFunc[ids[j]] {
				return perFunc[ids[i]] > perFunc[ids[j]]
			}
			return ids[i] < ids[j]
		})
	}
	var out []Func
	for _, id := range ids {
		if o.Symbol == "" && len(out) >= o.Top {
			break
		}
		f := p.Funcs[id]
		c := code[id]
		from := "data file"
		if c == nil {
			c = fromBinary(p, id)
			from = "binary"
		}
		if c == nil {
			if o.Symbol != "" {
				return nil, fmt.Errorf("no code for %s: the data file keeps code of sampled user functions with a known size, and %s is not at hand with the same build-id", f.Name, p.DSOs[f.DSO].Name)
			}
			continue
		}
		af := Func{Name: f.Name, DSO: model.BaseName(p.DSOs[f.DSO].Name), Start: f.Start, Samples: perFunc[id], Arch: c.Arch, CodeSource: from}
		if total > 0 {
			af.Percent = 100 * float64(af.Samples) / float64(total)
		}
		var err error
		if af.Insns, err = disassemble(c, f.Start); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		lineOf := lineLookup(p, c)
		lines := map[[2]any]uint64{}
		targets := map[uint64]bool{}
		for _, in := range af.Insns {
			if in.Target != 0 {
				targets[in.Target] = true
			}
		}
		for i := range af.Insns {
			in := &af.Insns[i]
			in.Samples = perAddr[id][in.Addr]
			if af.Samples > 0 {
				in.Percent = 100 * float64(in.Samples) / float64(af.Samples)
			}
			in.IsTarget = targets[in.Addr]
			in.File, in.Line = lineOf(in.Addr)
			if in.Samples > 0 && in.Line > 0 {
				lines[[2]any{in.File, in.Line}] += in.Samples
			}
		}
		for k, v := range lines {
			af.HotLines = append(af.HotLines, LineStat{File: k[0].(string), Line: k[1].(int), Samples: v, Percent: 100 * float64(v) / float64(max(af.Samples, 1))})
		}
		sort.Slice(af.HotLines, func(i, j int) bool {
			if af.HotLines[i].Samples != af.HotLines[j].Samples {
				return af.HotLines[i].Samples > af.HotLines[j].Samples
			}
			return af.HotLines[i].Line < af.HotLines[j].Line
		})
		out = append(out, af)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no function with code to annotate (kernel functions and functions without a symbol size have none)")
	}
	return out, nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// fromBinary reads a function's code from its object when the object on
// disk still has the recorded build-id.
func fromBinary(p *model.Profile, id int32) *model.Code {
	f := p.Funcs[id]
	d := p.DSOs[f.DSO]
	if d.Kind != model.DSOUser || f.Size == 0 {
		return nil
	}
	e, err := symbolize.OpenELF(d.Name, symbolize.Options{})
	if err != nil || (d.BuildID != "" && e.BuildID != d.BuildID) {
		return nil
	}
	b, err := e.Code(f.Start, f.Size)
	if err != nil {
		return nil
	}
	c := &model.Code{Func: id, Arch: e.Arch(), Bytes: b}
	for _, r := range e.Lines(f.Start, f.Start+f.Size) {
		// Files outside the profile's table are appended locally.
		idx := int32(-1)
		for i, name := range p.Files {
			if name == r.File {
				idx = int32(i)
			}
		}
		if idx < 0 {
			p.Files = append(p.Files, r.File)
			idx = int32(len(p.Files) - 1)
		}
		c.Lines = append(c.Lines, model.LineRow{Addr: r.Addr, File: idx, Line: int32(r.Line)})
	}
	return c
}

// lineLookup maps an address to the line row at or before it.
func lineLookup(p *model.Profile, c *model.Code) func(uint64) (string, int) {
	rows := append([]model.LineRow(nil), c.Lines...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Addr < rows[j].Addr })
	return func(a uint64) (string, int) {
		i := sort.Search(len(rows), func(i int) bool { return rows[i].Addr > a }) - 1
		if i < 0 {
			return "", 0
		}
		return p.Files[rows[i].File], int(rows[i].Line)
	}
}

func disassemble(c *model.Code, start uint64) ([]Insn, error) {
	var out []Insn
	switch c.Arch {
	case "amd64", "386":
		mode := 64
		if c.Arch == "386" {
			mode = 32
		}
		for off := 0; off < len(c.Bytes); {
			pc := start + uint64(off)
			inst, err := x86asm.Decode(c.Bytes[off:], mode)
			n := inst.Len
			in := Insn{Addr: pc}
			if err != nil || n == 0 {
				n = 1
				in.Text = "(bad)"
			} else {
				in.Text = x86asm.GNUSyntax(inst, pc, nil)
				for _, a := range inst.Args {
					if r, ok := a.(x86asm.Rel); ok {
						in.Target = uint64(int64(pc) + int64(n) + int64(r))
					}
				}
			}
			in.Bytes = hex.EncodeToString(c.Bytes[off : off+n])
			out = append(out, in)
			off += n
		}
	case "arm64":
		for off := 0; off+4 <= len(c.Bytes); off += 4 {
			pc := start + uint64(off)
			in := Insn{Addr: pc, Bytes: hex.EncodeToString(c.Bytes[off : off+4])}
			inst, err := arm64asm.Decode(c.Bytes[off:])
			if err != nil {
				in.Text = "(bad)"
			} else {
				in.Text = arm64asm.GNUSyntax(inst)
				for _, a := range inst.Args {
					if r, ok := a.(arm64asm.PCRel); ok {
						in.Target = uint64(int64(pc) + int64(r))
						// Show the absolute target, as objdump does.
						in.Text = pcRel.ReplaceAllString(in.Text, fmt.Sprintf("0x%x", in.Target))
					}
				}
			}
			out = append(out, in)
		}
	default:
		return nil, fmt.Errorf("no disassembler for architecture %q", c.Arch)
	}
	return out, nil
}

var pcRel = regexp.MustCompile(`\.[+-]0x[0-9a-f]+`)

// sources caches source files for interleaving.
type sources map[string][]string

func (s sources) line(file string, n int) string {
	lines, ok := s[file]
	if !ok {
		if f, err := os.Open(file); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
		s[file] = lines
	}
	if n >= 1 && n <= len(lines) {
		return strings.TrimRight(lines[n-1], " \t")
	}
	return ""
}

// WriteText prints the annotation like perf annotate --stdio.
func WriteText(w io.Writer, p *model.Profile, funcs []Func, o Options) {
	src := sources{}
	for _, f := range funcs {
		fmt.Fprintf(w, " Percent |\tSource code & Disassembly of %s for %s (%d samples, %.2f%% of all; code from the %s)\n", f.DSO, p.Meta.Event, f.Samples, f.Percent, f.CodeSource)
		fmt.Fprintf(w, "---------------------------------------------------------------------------\n")
		fmt.Fprintf(w, "         :\t%016x <%s>:\n", f.Start, f.Name)
		lastFile, lastLine := "", 0
		for _, in := range f.Insns {
			if !o.NoSource && in.Line > 0 && (in.File != lastFile || in.Line != lastLine) {
				fmt.Fprintf(w, "         :\t%s:%d\n", in.File, in.Line)
				if t := src.line(in.File, in.Line); t != "" {
					fmt.Fprintf(w, "         :\t  %s\n", t)
				}
				lastFile, lastLine = in.File, in.Line
			}
			pctStr := "        "
			if in.Samples > 0 {
				pctStr = fmt.Sprintf("%8.2f", in.Percent)
			}
			mark := "  "
			if in.IsTarget {
				mark = "->"
			}
			raw := ""
			if o.AsmRaw {
				raw = fmt.Sprintf("%-24s ", in.Bytes)
			}
			fmt.Fprintf(w, "%s :%s %6x:\t%s%s\n", pctStr, mark, in.Addr, raw, in.Text)
		}
		fmt.Fprintf(w, "\n Hottest source lines of %s:\n", f.Name)
		for i, l := range f.HotLines {
			if i >= 5 {
				break
			}
			fmt.Fprintf(w, " %7.2f%%  %s:%d", l.Percent, l.File, l.Line)
			if t := strings.TrimSpace(src.line(l.File, l.Line)); t != "" {
				fmt.Fprintf(w, "\t%s", t)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

// WriteJSON prints the annotation as JSON.
func WriteJSON(w io.Writer, funcs []Func) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(funcs)
}
