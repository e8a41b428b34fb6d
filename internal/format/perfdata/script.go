package perfdata

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// perf script text: one event line per sample, followed (with call chains)
// by one line per frame, leaf first, and a blank line:
//
//	work 20299 [000]   347.360384:     250000 cpu-clock:pppH:
//		            1161 spin_a+0x11 (/tmp/pd/work)
//		            11db main+0x1b (/tmp/pd/work)
//
// Without call chains the frame follows the event on the same line. This
// is the format FlameGraph's stackcollapse-perf.pl and inferno read; the
// folding below follows their conventions.

// ScriptSample is one sample of perf script text.
type ScriptSample struct {
	Comm     string
	Pid, Tid int32  // -1 when the text does not show them
	Event    string // as printed, modifiers included: "cpu-clock:pppH"
	Period   uint64 // 0 when the text has no period
	Time     uint64 // ns, as perf printed it (0 when the text has no time)
	Frames   []ScriptFrame
	hasPid   bool // the text shows pid/tid, not only the tid
}

// ScriptFrame is one frame line: address, function (offset stripped) and
// object as perf printed them.
type ScriptFrame struct {
	PC     string
	Func   string
	Module string
}

// ParseScript reads perf script text (the default fields, or -F with at
// least comm, tid, event, ip, sym and dso) and calls fn for each sample.
// Lines it cannot read are counted, not fatal; the count is returned.
func ParseScript(r io.Reader, fn func(*ScriptSample)) (weird int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var cur *ScriptSample
	emit := func() {
		if cur != nil {
			fn(cur)
			cur = nil
		}
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if strings.HasPrefix(line, "#") {
			continue
		}
		if line == "" {
			emit()
			continue
		}
		if cur != nil {
			if f, ok := parseFrameLine(line); ok {
				cur.Frames = append(cur.Frames, f)
				continue
			}
		}
		// Not a frame: the next sample (tracepoint samples without call
		// chains follow each other without blank lines).
		s, inline, ok := parseEventLine(line)
		if !ok {
			weird++
			continue
		}
		emit()
		cur = s
		if inline != "" {
			// A frame on the event line completes the sample; anything else
			// there is a tracepoint's payload, and frames may follow.
			if f, ok := parseFrameLine(inline); ok {
				cur.Frames = append(cur.Frames, f)
				emit()
			}
		}
	}
	emit()
	if err := sc.Err(); err != nil {
		return weird, fmt.Errorf("reading perf script text: %w", err)
	}
	return weird, nil
}

// parseEventLine splits "comm pid[/tid] [cpu] time: [period] event: rest".
// The comm may contain spaces; the pid is the first all-digit word after
// it that a space follows.
func parseEventLine(line string) (*ScriptSample, string, bool) {
	start := -1
	for i := 0; i <= len(line); i++ {
		if i < len(line) && line[i] != ' ' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start < 0 {
			continue
		}
		word, ws := line[start:i], start
		start = -1
		if ws == 0 || i == len(line) || strings.TrimSpace(line[:ws]) == "" {
			continue
		}
		pidS, tidS, slash := strings.Cut(word, "/")
		if !pidLike(pidS) || (slash && !pidLike(tidS)) {
			continue
		}
		s := &ScriptSample{Comm: strings.TrimSpace(line[:ws]), Pid: -1, Tid: -1}
		pid, _ := strconv.ParseInt(pidS, 10, 32)
		if slash {
			tid, _ := strconv.ParseInt(tidS, 10, 32)
			s.Pid, s.Tid, s.hasPid = int32(pid), int32(tid), true
		} else {
			s.Tid = int32(pid)
		}
		rest := line[i+1:]
		// "[cpu] time:" to the first colon, then "[period] event:".
		before, after, ok := strings.Cut(rest, ":")
		if !ok {
			return nil, "", false
		}
		if f := strings.Fields(before); len(f) > 0 {
			s.Time, _ = parseScriptTime(f[len(f)-1])
		}
		words := strings.Fields(after)
		if len(words) > 0 && allDigits(words[0]) {
			s.Period, _ = strconv.ParseUint(words[0], 10, 64)
			words = words[1:]
		}
		if len(words) == 0 {
			return s, "", true
		}
		ev := words[0]
		inline := ""
		if idx := strings.Index(after, ev); idx >= 0 {
			inline = strings.TrimSpace(after[idx+len(ev):])
		}
		if !strings.HasSuffix(ev, ":") {
			// The event name runs to the next ": " (tracepoints have a
			// colon inside).
			if j := strings.Index(inline, ": "); j >= 0 {
				ev += " " + inline[:j+1]
				inline = strings.TrimSpace(inline[j+1:])
			}
		}
		s.Event = strings.TrimSuffix(ev, ":")
		return s, inline, true
	}
	return nil, "", false
}

// parseScriptTime reads perf script's time, seconds with a fraction
// ("347.360384", or nine digits with --ns), as nanoseconds, exactly.
func parseScriptTime(s string) (uint64, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	if sec == "" || !allDigits(sec) || (frac != "" && !allDigits(frac)) || len(frac) > 9 {
		return 0, false
	}
	n, err := strconv.ParseUint(sec, 10, 64)
	if err != nil {
		return 0, false
	}
	f, _ := strconv.ParseUint((frac + "000000000")[:9], 10, 64)
	return n*1e9 + f, true
}

// pidLike accepts a pid as perf prints it: digits, or -1 for a task the
// kernel gave no pid in the recording's namespace.
func pidLike(s string) bool { return s == "-1" || allDigits(s) }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseFrameLine splits "pc func+0xoff (module)"; the module is the last
// word and must be in parentheses.
func parseFrameLine(line string) (ScriptFrame, bool) {
	line = strings.TrimLeft(line, " \t")
	pc, rest, ok := strings.Cut(line, " ")
	if !ok || pc == "" || !isHex(pc) {
		return ScriptFrame{}, false
	}
	i := strings.LastIndexByte(rest, ' ')
	if i < 0 {
		return ScriptFrame{}, false
	}
	mod := rest[i+1:]
	if len(mod) < 2 || mod[0] != '(' || mod[len(mod)-1] != ')' {
		return ScriptFrame{}, false
	}
	fn := strings.TrimSpace(rest[:i])
	if fn == "" {
		fn = " " // as FlameGraph does for "pc  (module)"
	}
	if j := strings.LastIndex(fn, "+0x"); j >= 0 && isHex(fn[j+3:]) {
		fn = fn[:j]
	}
	if d, ok := symbolize.FixHalfDemangledRust(fn); ok {
		fn = d
	}
	return ScriptFrame{PC: pc, Func: fn, Module: mod[1 : len(mod)-1]}, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// FoldOptions follow inferno-collapse-perf's flags.
type FoldOptions struct {
	PID, TID bool // name processes comm-PID, or comm-PID/TID
	Kernel   bool // mark kernel frames _[k]
	JIT      bool // mark JIT frames _[j]
	Addrs    bool // keep addresses of unknown frames
	// Event keeps one event (full name or without modifiers); "" keeps the
	// first event seen, as mixing events would mislead.
	Event string
}

// FoldScript reads perf script text into folded stacks (root first,
// semicolon-separated, led by the process name) weighted by period when
// the text has one, else by sample count.
func FoldScript(r io.Reader, o FoldOptions) (map[string]uint64, error) {
	out := map[string]uint64{}
	event := o.Event
	var parts []string
	_, err := ParseScript(r, func(s *ScriptSample) {
		if event == "" {
			event = s.Event
		}
		if s.Event != event && eventBase(s.Event) != event {
			return
		}
		parts = parts[:0]
		pname := strings.ReplaceAll(s.Comm, " ", "_")
		switch {
		case o.TID:
			pname += fmt.Sprintf("-%s/%d", s.pidText(), s.Tid)
		case o.PID:
			pname += "-" + s.pidText()
		}
		for i := len(s.Frames) - 1; i >= 0; i-- {
			f := s.Frames[i]
			if strings.HasPrefix(f.Func, "(") {
				continue // FlameGraph drops these
			}
			for k, fn := range strings.Split(f.Func, "->") {
				fn = foldName(fn, f, o.Addrs)
				if strings.HasPrefix(pname, "java") && strings.HasPrefix(fn, "L") && strings.Contains(fn, "/") {
					fn = fn[1:]
				}
				switch {
				case k > 0:
					// Java's inlined frames, after the one that holds them.
					if !strings.Contains(fn, "_[i]") {
						fn += "_[i]"
					}
				case o.Kernel && isKernelModule(f.Module):
					fn += "_[k]"
				case o.JIT && isJITModule(f.Module) && !strings.Contains(fn, "_[j]"):
					fn += "_[j]"
				}
				parts = append(parts, fn)
			}
		}
		if len(parts) == 0 {
			return
		}
		w := s.Period
		if w == 0 {
			w = 1
		}
		out[pname+";"+strings.Join(parts, ";")] += w
	})
	return out, err
}

// pidText is the pid for process names; FlameGraph writes "?" when the
// text shows only the tid.
func (s *ScriptSample) pidText() string {
	if !s.hasPid {
		return "?"
	}
	return strconv.Itoa(int(s.Pid))
}

// eventBase is an event's name without modifiers ("cpu-clock:pppH" →
// "cpu-clock"), what FlameGraph's --event-filter compares.
func eventBase(ev string) string {
	name, _, _ := strings.Cut(ev, ":")
	return name
}

// foldName is a frame's name in folded output: unknown functions take the
// object's file name, arguments are cut (but not Go's "pkg.(*T).M" or C++'s
// "(anonymous namespace)"), and semicolons become colons.
func foldName(fn string, f ScriptFrame, addrs bool) string {
	if fn == "[unknown]" {
		mod := f.Module
		if mod == "[unknown]" {
			if !addrs {
				return fn
			}
			mod = "unknown"
		}
		mod = mod[strings.LastIndexByte(mod, '/')+1:]
		if addrs {
			fn = "[" + mod + " <" + f.PC + ">]"
		} else {
			fn = "[" + mod + "]"
		}
	}
	fn = strings.ReplaceAll(fn, ";", ":")
	depth, lastDot := 0, -1
	for i := 0; i < len(fn); i++ {
		switch fn[i] {
		case '<', '{', '[':
			depth++
		case '>', '}', ']', ')':
			depth--
		case '.':
			lastDot = i + 1
		case '(':
			if depth == 0 && lastDot != i && !strings.HasPrefix(fn[i:], "(anonymous namespace)") {
				return fn[:i]
			}
			depth++
		}
	}
	return fn
}

func isKernelModule(m string) bool {
	return m != "[unknown]" && (strings.HasPrefix(m, "[") || strings.HasSuffix(m, ".ko") || isVmlinux(m))
}

func isVmlinux(m string) bool {
	i := strings.LastIndex(m, "vmlinux")
	if i < 0 {
		return false
	}
	for _, c := range m[i:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

func isJITModule(m string) bool {
	return strings.HasPrefix(m, "/tmp/perf-") && strings.HasSuffix(m, ".map") ||
		strings.Contains(m, "/jitted-") && strings.HasSuffix(m, ".so")
}

// WriteFolded writes folded stacks one per line, sorted, as
// "frame;frame;… weight".
func WriteFolded(w io.Writer, folded map[string]uint64) error {
	keys := make([]string, 0, len(folded))
	for k := range folded {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		fmt.Fprintf(bw, "%s %d\n", k, folded[k])
	}
	return bw.Flush()
}

// ScriptProfile reads perf script text into sonde's model, so report,
// diff and flame graphs work on it: frames keep perf's names, objects its
// paths; nothing is symbolized again.
func ScriptProfile(r io.Reader) (*model.Profile, error) {
	p := &model.Profile{}
	threads := model.Threads{}
	dsos := map[string]int32{}
	funcs := map[[2]string]int32{}
	locs := map[[3]string]int32{}
	stacks := map[string]int32{}
	events := map[string]uint16{}
	var ids []int32
	var key strings.Builder
	weird, err := ParseScript(r, func(s *ScriptSample) {
		if len(s.Frames) == 0 {
			return
		}
		ev, ok := events[s.Event]
		if !ok {
			ev = uint16(len(p.Meta.Events))
			events[s.Event] = ev
			info := model.EventInfo{Name: s.Event, Kind: "software"}
			if strings.Count(s.Event, ":") == 1 && !strings.Contains(s.Event, "-") {
				info.Kind = "tracepoint"
			}
			p.Meta.Events = append(p.Meta.Events, info)
		}
		ids = ids[:0]
		key.Reset()
		for _, f := range s.Frames {
			id, ok := locs[[3]string{f.Module, f.Func, f.PC}]
			if !ok {
				id = int32(len(p.Locs))
				addr, _ := strconv.ParseUint(f.PC, 16, 64)
				l := model.Loc{DSO: -1, Addr: addr, Func: -1, File: -1}
				if f.Module != "[unknown]" {
					d, ok := dsos[f.Module]
					if !ok {
						d = int32(len(p.DSOs))
						dsos[f.Module] = d
						kind := model.DSOUser
						switch {
						case f.Module == "[kernel.kallsyms]" || isVmlinux(f.Module):
							kind = model.DSOKernel
						case isKernelModule(f.Module):
							kind = model.DSOModule
						case isJITModule(f.Module):
							kind = model.DSOJIT
						case f.Module == "[vdso]":
							kind = model.DSOVDSO
						}
						p.DSOs = append(p.DSOs, model.DSO{Name: f.Module, Kind: kind})
					}
					l.DSO = d
				}
				if f.Func != "[unknown]" && l.DSO >= 0 {
					fid, ok := funcs[[2]string{f.Module, f.Func}]
					if !ok {
						fid = int32(len(p.Funcs))
						funcs[[2]string{f.Module, f.Func}] = fid
						p.Funcs = append(p.Funcs, model.Func{Name: f.Func, DSO: l.DSO})
					}
					l.Func = fid
				}
				p.Locs = append(p.Locs, l)
				locs[[3]string{f.Module, f.Func, f.PC}] = id
			}
			ids = append(ids, id)
			fmt.Fprintf(&key, "%d,", id)
		}
		st, ok := stacks[key.String()]
		if !ok {
			st = int32(len(p.Stacks))
			stacks[key.String()] = st
			p.Stacks = append(p.Stacks, append([]int32(nil), ids...))
		}
		if len(s.Frames) > 1 {
			p.Meta.Callchain = true
		}
		t := model.Thread{Pid: s.Pid, Tid: s.Tid, Comm: s.Comm}
		if t.Pid < 0 {
			t.Pid = t.Tid
		}
		th := threads.ID(p, t)
		period := s.Period
		if period == 0 {
			period = 1
		}
		p.Samples = append(p.Samples, model.Sample{Time: s.Time, Thread: th, Stack: st, Period: period, Event: ev})
	})
	if err != nil {
		return nil, err
	}
	if len(p.Samples) == 0 {
		return nil, fmt.Errorf("no samples with frames in the perf script text (%d lines not understood)", weird)
	}
	var names []string
	for _, e := range p.Meta.Events {
		names = append(names, e.Name)
	}
	p.Meta.Event = strings.Join(names, ",")
	p.Meta.Unwinder = "perf script"
	p.Meta.DurationNS = sampleSpan(p.Samples)
	if weird > 0 {
		p.Meta.Warnings = append(p.Meta.Warnings, fmt.Sprintf("%d lines of the perf script text were not understood", weird))
	}
	return p, p.Validate()
}

// LooksLikeScript reports whether head (the first kilobytes of a file) is
// perf script text: its first sample line reads as one, with a frame on it
// or on the next line. Folded stacks and sonde data files do not.
func LooksLikeScript(head []byte) bool {
	lines := strings.Split(string(head), "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		_, inline, ok := parseEventLine(l)
		if !ok {
			return false
		}
		if _, ok := parseFrameLine(inline); ok {
			return true
		}
		// The next line must be a frame (a truncated head may end here).
		return i+1 < len(lines) && func() bool { _, ok := parseFrameLine(lines[i+1]); return ok }()
	}
	return false
}

// sampleSpan is the time the samples span, first to last (0 without
// times): the duration of an imported recording, from its own records.
func sampleSpan(samples []model.Sample) uint64 {
	var first, last uint64
	for _, s := range samples {
		if s.Time == 0 {
			continue
		}
		if first == 0 || s.Time < first {
			first = s.Time
		}
		last = max(last, s.Time)
	}
	return last - first
}
