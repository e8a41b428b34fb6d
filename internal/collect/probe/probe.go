// Package probe creates and removes dynamic probes through tracefs:
// user-space probes (uprobe_events) by symbol, with arguments from
// registers or by DWARF parameter name, return probes with $retval, and
// kernel probes (kprobe_events) where the kernel has them. Probes become
// tracepoints named probe_<binary>:<func> that every sonde command can use.
// Temporary probes (inline -e u:BIN:FUNC specs) live in a group named after
// sonde's pid and are removed at exit, or at the next start after a crash.
package probe

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
)

// Arg is one fetched argument: NAME=FETCHARG as uprobe_events wants it.
type Arg struct {
	Name  string
	Fetch string
}

// Probe is one dynamic probe.
type Probe struct {
	Group, Event string
	Binary       string // "" for kernel probes
	Func         string
	Offset       uint64 // file offset of the function in Binary
	// Extra holds further file offsets of the same event: the compiler's
	// clones and inlined copies of Func (tracefs keeps one event with a
	// probe at each).
	Extra  []uint64 `json:",omitempty"`
	Return bool
	Args   []Arg
	// Note says which code Func resolved to when it is not simply its
	// symbol (see Resolve); one line for stderr.
	Note string `json:"-"`
}

// Name is the tracepoint name: group:event.
func (p Probe) Name() string { return p.Group + ":" + p.Event }

// Definition is the uprobe_events/kprobe_events line that creates it.
func (p Probe) Definition() string {
	kind := "p"
	if p.Return {
		kind = "r"
	}
	return p.definition(kind, p.Offset)
}

// Definitions are the lines for every location of the event.
func (p Probe) Definitions() []string {
	out := []string{p.Definition()}
	for _, off := range p.Extra {
		out = append(out, p.definition(strings.SplitN(out[0], ":", 2)[0], off))
	}
	return out
}

func (p Probe) definition(kind string, off uint64) string {
	var b strings.Builder
	if p.Binary != "" {
		fmt.Fprintf(&b, "%s:%s/%s %s:0x%x", kind, p.Group, p.Event, p.Binary, off)
	} else {
		fmt.Fprintf(&b, "%s:%s/%s %s", kind, p.Group, p.Event, p.Func)
	}
	for _, a := range p.Args {
		fmt.Fprintf(&b, " %s=%s", a.Name, a.Fetch)
	}
	return b.String()
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// Sanitize makes an identifier tracefs accepts.
func Sanitize(s string) string {
	s = nonIdent.ReplaceAllString(s, "_")
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "_" + s
	}
	return s
}

// argRegs are the integer argument registers at function entry, by ABI.
var argRegs = map[string][]string{
	"amd64": {"%di", "%si", "%dx", "%cx", "%r8", "%r9"},
	"arm64": {"%x0", "%x1", "%x2", "%x3", "%x4", "%x5", "%x6", "%x7"},
	"386":   {"%ax", "%dx", "%cx"},
	"arm":   {"%r0", "%r1", "%r2", "%r3"},
}

// Parse builds a user probe from "FUNC [ARG[=LOC] …]" or
// "FUNC%return [$retval]" against binary. group overrides probe_<binary>.
func Parse(spec, binary, group string) (Probe, error) {
	fields := strings.Fields(spec)
	if len(fields) == 0 {
		return Probe{}, fmt.Errorf("empty probe spec")
	}
	fn := fields[0]
	p := Probe{}
	if f, ok := strings.CutSuffix(fn, "%return"); ok {
		fn, p.Return = f, true
	}
	p.Func = fn
	if binary == "" {
		return p, kernelProbe(&p, fields[1:], group)
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return p, err
	}
	p.Binary = abs
	ef, err := elf.Open(abs)
	if err != nil {
		return p, fmt.Errorf("opening %s: %w", binary, err)
	}
	defer ef.Close()
	res, err := Resolve(ef, fn, p.Return)
	if err != nil {
		return p, InBinary(binary, err)
	}
	p.Offset, p.Note = res.Sites[0].Offset, res.Note
	for _, s := range res.Sites[1:] {
		p.Extra = append(p.Extra, s.Offset)
	}
	p.Group = group
	if p.Group == "" {
		base := filepath.Base(abs)
		if l, err := os.Readlink(abs); err == nil && strings.HasSuffix(l, " (deleted)") {
			// /proc/PID/exe of a deleted binary: named as it was.
			base = filepath.Base(strings.TrimSuffix(l, " (deleted)"))
		}
		p.Group = "probe_" + Sanitize(base)
	}
	p.Event = Sanitize(fn)
	if p.Return {
		p.Event += "__return"
	}
	for _, a := range fields[1:] {
		name, loc, hasLoc := strings.Cut(a, "=")
		if !hasLoc {
			loc = name
		}
		name = Sanitize(strings.TrimLeft(name, "$%"))
		if !res.Plain() && loc != "" && !strings.ContainsAny(loc[:1], "%$+-@") {
			// Clones may drop or reorder parameters and inlined copies
			// keep them anywhere: the source signature says nothing.
			return p, fmt.Errorf("argument %q by name: %s resolved to compiler-made code (%s), whose arguments need not be where the source signature puts them; fetch a register instead (e.g. %s)",
				name, fn, res.Sites[0].Kind, argRegs[runtime.GOARCH][0])
		}
		fetch, err := resolveArg(ef, fn, loc, p.Return)
		if err != nil {
			return p, err
		}
		p.Args = append(p.Args, Arg{Name: name, Fetch: fetch})
	}
	return p, nil
}

func fileOffset(ef *elf.File, addr uint64) (uint64, error) {
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address 0x%x is in no executable segment", addr)
}

// resolveArg turns a location into a fetch argument: registers, stack
// offsets and $-variables pass through; a name is looked up as a DWARF
// parameter of fn and mapped to its ABI register at entry.
func resolveArg(ef *elf.File, fn, loc string, ret bool) (string, error) {
	switch {
	case strings.HasPrefix(loc, "%") || strings.HasPrefix(loc, "$") || strings.HasPrefix(loc, "+") || strings.HasPrefix(loc, "-") || strings.HasPrefix(loc, "@"):
		if loc == "$retval" && !ret {
			return "", fmt.Errorf("$retval needs a return probe (FUNC%%return)")
		}
		return loc, nil
	}
	name, typ, _ := strings.Cut(loc, ":")
	if ret {
		return "", fmt.Errorf("argument %q: a return probe sees only $retval", name)
	}
	d, err := ef.DWARF()
	if err != nil {
		return "", fmt.Errorf("argument %q needs DWARF debug info (build with -g) or a register (e.g. %s)", name, argRegs[runtime.GOARCH][0])
	}
	params, err := dwarfParams(d, fn)
	if err != nil {
		return "", err
	}
	regs := argRegs[runtime.GOARCH]
	for i, prm := range params {
		if prm.name != name {
			continue
		}
		if i >= len(regs) {
			return "", fmt.Errorf("parameter %q is argument %d: only the first %d are in registers", name, i+1, len(regs))
		}
		if typ == "" {
			typ = prm.typ
		}
		return regs[i] + ":" + typ, nil
	}
	var names []string
	for _, p := range params {
		names = append(names, p.name)
	}
	return "", fmt.Errorf("%s has no parameter %q (parameters: %s)", fn, name, strings.Join(names, ", "))
}

type param struct{ name, typ string }

// ParamNames lists fn's formal parameters in order, from DWARF.
func ParamNames(d *dwarf.Data, fn string) ([]string, error) {
	ps, err := dwarfParams(d, fn)
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.name
	}
	return names, err
}

func dwarfParams(d *dwarf.Data, fn string) ([]param, error) {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		if n, _ := e.Val(dwarf.AttrName).(string); n != fn || !e.Children {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		var out []param
		for {
			c, err := r.Next()
			if err != nil || c == nil || c.Tag == 0 {
				break
			}
			if c.Tag == dwarf.TagFormalParameter {
				n, _ := c.Val(dwarf.AttrName).(string)
				out = append(out, param{name: n, typ: fetchType(d, c)})
			}
			if c.Children {
				r.SkipChildren()
			}
		}
		if len(out) > 0 || e.Val(dwarf.AttrLowpc) != nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("no DWARF description of %s", fn)
}

// fetchType maps a parameter's C type to a fetch type (s32, u64, x64…).
func fetchType(d *dwarf.Data, e *dwarf.Entry) string {
	off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return "x64"
	}
	t, err := d.Type(off)
	if err != nil {
		return "x64"
	}
	for {
		switch tt := t.(type) {
		case *dwarf.TypedefType:
			t = tt.Type
			continue
		case *dwarf.QualType:
			t = tt.Type
			continue
		}
		break
	}
	size := t.Size()
	if size <= 0 || size > 8 {
		return "x64"
	}
	bits := strconv.Itoa(int(size) * 8)
	switch t.(type) {
	case *dwarf.IntType, *dwarf.CharType, *dwarf.EnumType, *dwarf.BoolType:
		return "s" + bits
	case *dwarf.UintType, *dwarf.UcharType:
		return "u" + bits
	}
	return "x" + bits
}

func kernelProbe(p *Probe, args []string, group string) error {
	root, err := tracefs.Root()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "kprobe_events")); err != nil {
		return fmt.Errorf("kernel probes are not available: this kernel has no kprobe_events in tracefs (needs CONFIG_KPROBE_EVENTS); use a tracepoint (sonde list) or a user probe with -x BINARY")
	}
	p.Group = group
	if p.Group == "" {
		p.Group = "probe"
	}
	p.Event = Sanitize(p.Func)
	if p.Return {
		p.Event += "__return"
	}
	for _, a := range args {
		name, loc, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("kernel probe argument %q: give NAME=LOCATION (a register, $retval, $argN)", a)
		}
		p.Args = append(p.Args, Arg{Name: Sanitize(name), Fetch: loc})
	}
	return nil
}

func eventsFile(p Probe) (string, error) {
	root, err := tracefs.Root()
	if err != nil {
		return "", err
	}
	name := "uprobe_events"
	if p.Binary == "" {
		name = "kprobe_events"
	}
	path := filepath.Join(root, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s is missing in tracefs: the kernel lacks %s", name, map[string]string{"uprobe_events": "CONFIG_UPROBE_EVENTS", "kprobe_events": "CONFIG_KPROBE_EVENTS"}[name])
	}
	return path, nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("writing %s: permission denied (run as root)", path)
		}
		return err
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("%s: %w%s", strings.TrimSpace(line), err, lastError(filepath.Dir(path)))
	}
	return nil
}

// lastError reads tracefs's error_log for the reason of a rejected line.
func lastError(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "error_log"))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "error:") {
			return " (" + strings.TrimSpace(lines[i][strings.Index(lines[i], "error:"):]) + ")"
		}
	}
	return ""
}

// Add creates the probe.
func Add(p Probe) error {
	path, err := eventsFile(p)
	if err != nil {
		return err
	}
	if existing, _ := List(); existing != nil {
		for _, e := range existing {
			if e.Name() == p.Name() {
				return fmt.Errorf("probe %s exists already (sonde probe --del %s)", p.Name(), p.Name())
			}
		}
	}
	for i, line := range p.Definitions() {
		if err := appendLine(path, line); err != nil {
			if i > 0 {
				delProbe(p) // not half an event
			}
			return err
		}
	}
	return nil
}

// Del removes a probe by group:event (or event alone when unique).
func Del(name string) error {
	all, err := List()
	if err != nil {
		return err
	}
	var match []Probe
	for _, p := range all {
		if p.Name() == name || p.Event == name {
			match = append(match, p)
		}
	}
	if len(match) == 0 {
		var names []string
		for _, p := range all {
			names = append(names, p.Name())
		}
		if len(names) == 0 {
			return fmt.Errorf("no probe %q: there are no probes", name)
		}
		return fmt.Errorf("no probe %q (probes: %s)", name, strings.Join(names, ", "))
	}
	if len(match) > 1 {
		return fmt.Errorf("%q matches %d probes: give group:event", name, len(match))
	}
	return delProbe(match[0])
}

func delProbe(p Probe) error {
	path, err := eventsFile(p)
	if err != nil {
		return err
	}
	if err := appendLine(path, "-:"+p.Group+"/"+p.Event); err != nil {
		return fmt.Errorf("removing %s (is it still in use?): %w", p.Name(), err)
	}
	return nil
}

// List returns the probes defined in uprobe_events and kprobe_events.
func List() ([]Probe, error) {
	root, err := tracefs.Root()
	if err != nil {
		return nil, err
	}
	var out []Probe
	for _, name := range []string{"uprobe_events", "kprobe_events"} {
		f, err := os.Open(filepath.Join(root, name))
		if err != nil {
			continue
		}
		ps, err := ParseEvents(f, name == "uprobe_events")
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// ParseEvents reads uprobe_events/kprobe_events lines such as
// "p:probe_work/spin_a /tmp/work:0x0000000000001139 n=%di:u64".
func ParseEvents(r io.Reader, user bool) ([]Probe, error) {
	var out []Probe
	index := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kind, ge, ok := strings.Cut(f[0], ":")
		if !ok {
			continue
		}
		g, e, ok := strings.Cut(ge, "/")
		if !ok {
			continue
		}
		p := Probe{Group: g, Event: e, Return: kind == "r"}
		if user {
			bin, off, _ := strings.Cut(f[1], ":")
			p.Binary = bin
			off = strings.TrimSuffix(off, "%return")
			if i := strings.IndexByte(off, '('); i >= 0 {
				off = off[:i]
			}
			p.Offset, _ = strconv.ParseUint(strings.TrimPrefix(off, "0x"), 16, 64)
		} else {
			p.Func = f[1]
		}
		// One event with probes at several places (clones, inlined
		// copies) is listed once a place.
		if i, ok := index[p.Name()]; ok && user {
			out[i].Extra = append(out[i].Extra, p.Offset)
			continue
		}
		index[p.Name()] = len(out)
		for _, a := range f[2:] {
			n, v, _ := strings.Cut(a, "=")
			p.Args = append(p.Args, Arg{Name: n, Fetch: v})
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

var (
	tempMu sync.Mutex
	temps  []Probe
)

// TempGroup is the group of this process's temporary probes.
func TempGroup() string { return fmt.Sprintf("sonde_%d", os.Getpid()) }

// AddTemp creates a probe that RemoveTemp (or the next sonde start, after a
// crash) removes.
func AddTemp(p Probe) error {
	if err := Add(p); err != nil {
		return err
	}
	tempMu.Lock()
	temps = append(temps, p)
	tempMu.Unlock()
	return nil
}

// RemoveTemp deletes this process's temporary probes; call it after the
// events using them are closed.
func RemoveTemp() {
	tempMu.Lock()
	defer tempMu.Unlock()
	for _, p := range temps {
		delProbe(p)
	}
	temps = nil
}

var staleGroup = regexp.MustCompile(`^sonde_(\d+)$`)

// CleanStale removes temporary probes left by sonde processes that died
// without cleaning up (SIGKILL, a crash). It returns how many it removed.
func CleanStale() int {
	root, err := tracefs.Root()
	if err != nil {
		return 0
	}
	if _, err := os.Stat(filepath.Join(root, "uprobe_events")); err != nil {
		return 0
	}
	all, err := List()
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range all {
		m := staleGroup.FindStringSubmatch(p.Group)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil && sameExe(pid) {
			continue // its owner still runs
		}
		if delProbe(p) == nil {
			n++
		}
	}
	return n
}

// sameExe guesses whether pid is a sonde (pids are reused).
func sameExe(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "sonde")
}
