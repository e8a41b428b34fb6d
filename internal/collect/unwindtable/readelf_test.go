package unwindtable

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// This file checks tables against binutils' own CFA interpreter:
// `readelf --debug-dump=frames-interp` prints, for every FDE, the rows of its
// CFA table (pc, CFA rule, one column per register rule). readelf is an
// independent implementation, so agreement on every row boundary is ground truth.

type refRow struct {
	loc  uint64
	cfa  string            // "rsp+8", "x29+16", "exp", ...
	cols map[string]string // register name → "u", "c-16", "exp", "s", "r12", ...
}

type refFDE struct {
	section    string // ".eh_frame" or ".debug_frame"
	offset     uint64
	cie        uint64
	begin, end uint64
	rows       []refRow
	raUndef    bool // the raw program has DW_CFA_undefined on the RA column
	raCol      string
}

type refDump struct {
	fdes []*refFDE
	cies map[string]refRow // section + offset → the CIE's initial row
	raOf map[string]string // section + offset → the CIE's return address column
}

var (
	reEntry  = regexp.MustCompile(`^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ (CIE|FDE)(?: cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+))?`)
	reCIERA  = regexp.MustCompile(` ra=(\d+)`)
	reRow    = regexp.MustCompile(`^([0-9a-f]{8,16}) +(\S+)(.*)$`)
	reHeader = regexp.MustCompile(`^ +LOC +CFA(.*)$`)
	reSect   = regexp.MustCompile(`^Contents of the (\.\S+) section`)
)

func runReadelf(t *testing.T, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf (binutils) not installed")
	}
	out, err := exec.Command("readelf", args...).Output()
	// readelf exits 1 when a file lacks some debug section it looked for, yet
	// prints the frames; only an empty dump is a failure.
	if err != nil && len(out) == 0 {
		t.Fatalf("readelf %v: %v", args, err)
	}
	return out
}

// readelfLines runs readelf with flag on path and calls fn with each line
// of its dump and the section the line is in.
func readelfLines(t *testing.T, flag, path string, fn func(sect, line string)) {
	t.Helper()
	sect := ""
	sc := bufio.NewScanner(bytes.NewReader(runReadelf(t, flag, path)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reSect.FindStringSubmatch(line); m != nil {
			sect = m[1]
			continue
		}
		fn(sect, line)
	}
}

// readelfFrames parses frames-interp output, and the raw dump to learn which
// FDEs set the RA column undefined (readelf prints "u" both for that and for a
// column without a rule, which on arm64 means the RA is still in x30).
func readelfFrames(t *testing.T, path string, raReg string) *refDump {
	d := &refDump{cies: map[string]refRow{}, raOf: map[string]string{}}
	byKey := map[string]*refFDE{}
	var cur *refFDE
	var curCIE string
	var cols []string
	readelfLines(t, "-wF", path, func(sect, line string) {
		if strings.Contains(line, "ZERO terminator") {
			cur, curCIE, cols = nil, "", nil
			return
		}
		if m := reEntry.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseUint(m[1], 16, 64)
			cur, curCIE, cols = nil, "", nil
			if m[2] == "CIE" {
				curCIE = fmt.Sprintf("%s:%x", sect, off)
				if ra := reCIERA.FindStringSubmatch(line); ra != nil {
					d.raOf[curCIE] = ra[1]
				}
				return
			}
			cie, _ := strconv.ParseUint(m[3], 16, 64)
			b, _ := strconv.ParseUint(m[4], 16, 64)
			e, _ := strconv.ParseUint(m[5], 16, 64)
			cur = &refFDE{section: sect, offset: off, cie: cie, begin: b, end: e}
			d.fdes = append(d.fdes, cur)
			byKey[fmt.Sprintf("%s:%x", sect, off)] = cur
			return
		}
		if m := reHeader.FindStringSubmatch(line); m != nil {
			cols = strings.Fields(m[1])
			return
		}
		if m := reRow.FindStringSubmatch(line); m != nil && cols != nil {
			loc, _ := strconv.ParseUint(m[1], 16, 64)
			// A register rule prints as "r10 (r10)": glue the name back on.
			var vals []string
			for _, v := range strings.Fields(m[3]) {
				if strings.HasPrefix(v, "(") && len(vals) > 0 {
					vals[len(vals)-1] += " " + v
					continue
				}
				vals = append(vals, v)
			}
			r := refRow{loc: loc, cfa: m[2], cols: map[string]string{}}
			for i, c := range cols {
				if i < len(vals) {
					r.cols[c] = vals[i]
				}
			}
			switch {
			case cur != nil:
				cur.rows = append(cur.rows, r)
			case curCIE != "":
				d.cies[curCIE] = r
			}
		}
	})
	// Raw dump: find DW_CFA_undefined on the RA register.
	cur = nil
	readelfLines(t, "-wf", path, func(sect, line string) {
		if m := reEntry.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseUint(m[1], 16, 64)
			cur = byKey[fmt.Sprintf("%s:%x", sect, off)]
			return
		}
		if cur != nil && strings.Contains(line, "DW_CFA_undefined: "+raReg+" ") {
			cur.raUndef = true
		}
	})
	return d
}

// names of the registers readelf prints, per architecture.
type refNames struct {
	sp, fp, raReg string
	raCol         string // the usual return address column
	arch          Arch
}

var (
	namesX86   = refNames{sp: "rsp", fp: "rbp", raReg: "r16", raCol: "16", arch: ArchX86_64}
	namesARM64 = refNames{sp: "sp", fp: "x29", raReg: "r30", raCol: "30", arch: ArchARM64}
)

// checkAgainstReadelf compares the table with readelf at the first and last pc
// of every row of every FDE readelf printed (FDEs overlapping another are
// skipped: which one wins is a choice, not a fact). It returns the number of
// FDEs and row boundaries checked.
func checkAgainstReadelf(t *testing.T, tab *Table, ref *refDump, n refNames, sections ...string) (fdes, checks int) {
	t.Helper()
	want := map[string]bool{}
	for _, s := range sections {
		want[s] = true
	}
	// Overlap detection over all FDEs readelf saw.
	type span struct{ b, e uint64 }
	var spans []span
	for _, f := range ref.fdes {
		spans = append(spans, span{f.begin, f.end})
	}
	overlaps := func(f *refFDE) bool {
		c := 0
		for _, s := range spans {
			if s.b < f.end && f.begin < s.e {
				c++
			}
		}
		return c > 1
	}
	failures := 0
	for _, f := range ref.fdes {
		if !want[f.section] || f.end <= f.begin || overlaps(f) {
			continue
		}
		rows := f.rows
		if len(rows) == 0 {
			// readelf prints no table when the FDE adds nothing to its CIE.
			cie, ok := ref.cies[fmt.Sprintf("%s:%x", f.section, f.cie)]
			if !ok {
				t.Fatalf("FDE %#x: CIE %#x not in readelf output", f.offset, f.cie)
			}
			cie.loc = f.begin
			rows = []refRow{cie}
		}
		f.raCol = ref.raOf[fmt.Sprintf("%s:%x", f.section, f.cie)]
		fdes++
		for i, r := range rows {
			end := f.end
			if i+1 < len(rows) {
				end = rows[i+1].loc
			}
			if end <= r.loc {
				continue
			}
			for _, pc := range []uint64{r.loc, end - 1} {
				checks++
				if msg := compareRow(tab.Lookup(pc), r, f, n); msg != "" {
					failures++
					if failures <= 20 {
						t.Errorf("%s FDE %#x pc %#x: %s (readelf: cfa %s %v; ours %+v)", f.section, f.offset, pc, msg, r.cfa, r.cols, tab.Lookup(pc))
					}
				}
			}
		}
	}
	if failures > 20 {
		t.Errorf("%d mismatches in all", failures)
	}
	return fdes, checks
}

// compareRow says how row differs from readelf's row, or "" if it agrees.
func compareRow(row Row, r refRow, f *refFDE, n refNames) string {
	ra := r.cols["ra"]
	// The return address first: undefined ends the walk.
	if ra == "u" && (n.arch == ArchX86_64 || f.raUndef) {
		if row.Kind != KindStop {
			return "want stop row"
		}
		return ""
	}
	if row.Kind == KindStop || row.Kind == KindNone {
		return "unexpected " + row.Kind.String()
	}
	if r.cfa == "exp" || ra == "exp" {
		switch row.Kind {
		case KindPLT, KindFPDeref, KindSPDeref, KindSignal, KindUnsupported:
			return "" // TestCFAExpressions checks these against the expressions' text
		}
		return "want an expression kind"
	}
	if f.raCol != n.raCol {
		// Hand-written code naming another return column (arm64 glibc has one
		// using x15): the walker cannot follow it.
		if row.Kind != KindUnsupported {
			return "want unsupported for return column " + f.raCol
		}
		return ""
	}
	// CFA = reg+off.
	var kind Kind
	var rest string
	switch {
	case strings.HasPrefix(r.cfa, n.sp+"+"), strings.HasPrefix(r.cfa, n.sp+"-"):
		kind, rest = KindSP, r.cfa[len(n.sp):]
	case strings.HasPrefix(r.cfa, n.fp+"+"), strings.HasPrefix(r.cfa, n.fp+"-"):
		kind, rest = KindFP, r.cfa[len(n.fp):]
	default:
		if row.Kind != KindUnsupported {
			return "want unsupported for CFA " + r.cfa
		}
		return ""
	}
	if n.arch == ArchX86_64 && ra != "" && ra[0] == 'r' {
		if row.Kind != KindUnsupported {
			return "want unsupported for RA in " + ra
		}
		return ""
	}
	if row.Kind == KindUnsupported {
		return "unsupported"
	}
	off, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return "bad readelf CFA " + r.cfa
	}
	if row.Kind != kind || int64(row.CFA)*8 != off {
		return "CFA differs"
	}
	// Return address.
	switch {
	case ra == "u" || ra == "" || ra == "s":
		if row.Flags&FlagRAInLR == 0 {
			return "want RA in LR"
		}
	case strings.HasPrefix(ra, "c"):
		o, _ := strconv.ParseInt(ra[1:], 10, 64)
		if row.Flags&FlagRAInLR != 0 || int64(row.RA)*8 != o {
			return "RA slot differs"
		}
	default:
		if row.Flags&FlagRAInLR == 0 {
			return "RA rule " + ra
		}
	}
	// Frame pointer.
	fp := r.cols[n.fp]
	switch {
	case fp == "" || fp == "u" || fp == "s":
		if row.FP != 0 || row.Flags&FlagFPUnknown != 0 {
			return "want FP unchanged"
		}
	case strings.HasPrefix(fp, "c"):
		o, _ := strconv.ParseInt(fp[1:], 10, 64)
		if int64(row.FP)*8 != o {
			return "FP slot differs"
		}
	default:
		if row.Flags&FlagFPUnknown == 0 && fp != n.fp {
			return "want FP unknown for " + fp
		}
	}
	return ""
}

func buildFile(t *testing.T, path string) *Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	tab, err := Build(f)
	if err != nil {
		t.Fatalf("building %s: %v", path, err)
	}
	return tab
}

func TestAgainstReadelf(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		names      refNames
		minFDEs    int
	}{
		{"libc_x86_64", "/usr/lib/x86_64-linux-gnu/libc.so.6", namesX86, 3000},
		{"python3_11", "/usr/bin/python3.11", namesX86, 9000},
		{"libc_arm64", "/usr/aarch64-linux-gnu/lib/libc.so.6", namesARM64, 3000},
		{"libcrypto_x86_64", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", namesX86, 10000},
		{"ld_so_x86_64", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", namesX86, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				// CI installs them (.ci/run): there a missing file fails.
				if os.Getenv("SONDE_REQUIRE_PRIVILEGED") == "1" {
					t.Fatalf("%s not installed (arm64: apt-get install libc6-arm64-cross)", tc.path)
				}
				t.Skipf("%s not installed (arm64: apt-get install libc6-arm64-cross)", tc.path)
			}
			tab := buildFile(t, tc.path)
			if tab.Arch != tc.names.arch {
				t.Fatalf("arch %v, want %v", tab.Arch, tc.names.arch)
			}
			ref := readelfFrames(t, tc.path, tc.names.raReg)
			fdes, checks := checkAgainstReadelf(t, tab, ref, tc.names, ".eh_frame", ".debug_frame")
			if fdes < tc.minFDEs {
				t.Errorf("checked %d FDEs, want at least %d", fdes, tc.minFDEs)
			}
			t.Logf("%s: %d FDEs, %d row boundaries agree with readelf; %d rows (%d bytes), stats %+v",
				tc.path, fdes, checks, len(tab.Rows), tab.Bytes(), tab.Stats)
		})
	}
}

var (
	reLoc    = regexp.MustCompile(`DW_CFA_(?:advance_loc\d?|set_loc): .* to ([0-9a-f]+)$`)
	reCFAExp = regexp.MustCompile(`DW_CFA_def_cfa_expression \((.*)\)$`)
	rePLTExp = regexp.MustCompile(`^DW_OP_breg7 \(rsp\): (\d+); DW_OP_breg16 \(rip\): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit(\d+); DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus$`)
	reDeref  = regexp.MustCompile(`^DW_OP_breg([67]) \((?:rbp|rsp)\): (-?\d+); DW_OP_deref(?:; DW_OP_plus_uconst: (\d+))?$`)
)

// TestCFAExpressions checks every DW_CFA_def_cfa_expression readelf prints
// for x86-64 files against the rule of the row where it takes effect: the PLT
// expression, the deref forms (gcc's DRAP, OpenSSL's saved SP), and anything
// else unsupported. Signal frames are TestSignalFrame's.
func TestCFAExpressions(t *testing.T) {
	for _, path := range []string{libcX86, python311, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		tab := buildFile(t, path)
		kinds := map[Kind]int{}
		var loc uint64
		sc := bufio.NewScanner(bytes.NewReader(runReadelf(t, "-wf", path)))
		sc.Buffer(nil, 1<<20)
		signal := false
		for sc.Scan() {
			line := sc.Text()
			if m := reEntry.FindStringSubmatch(line); m != nil {
				if m[2] == "FDE" {
					loc, _ = strconv.ParseUint(m[4], 16, 64)
				}
				continue
			}
			if strings.HasPrefix(line, "  Augmentation:") {
				signal = strings.Contains(line, "S")
			}
			if m := reLoc.FindStringSubmatch(line); m != nil {
				loc, _ = strconv.ParseUint(m[1], 16, 64)
				continue
			}
			m := reCFAExp.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			got := tab.Lookup(loc).Rule
			var want Rule
			switch {
			case rePLTExp.MatchString(m[1]):
				p := rePLTExp.FindStringSubmatch(m[1])
				n, _ := strconv.Atoi(p[1])
				thr, _ := strconv.Atoi(p[2])
				want = Rule{Kind: KindPLT, CFA: int16(n / 8), FP: int16(thr), RA: -1}
			case reDeref.MatchString(m[1]):
				if signal {
					continue
				}
				d := reDeref.FindStringSubmatch(m[1])
				n, _ := strconv.Atoi(d[2])
				add, _ := strconv.Atoi(d[3])
				want = got // FP and RA slots are TestAgainstReadelf's
				want.Kind, want.CFA = KindSPDeref, int16(n/8)
				if d[1] == "6" {
					want.Kind = KindFPDeref
				}
				want.Flags = got.Flags&0x0f | uint8(add/8)<<derefAddShift
			default:
				want = Rule{Kind: KindUnsupported, Flags: got.Flags & FlagSignal}
			}
			kinds[want.Kind]++
			if got != want {
				t.Errorf("%s pc %#x: %s gives %+v, want %+v", path, loc, m[1], got, want)
			}
		}
		t.Logf("%s: CFA expressions by kind %v", path, kinds)
	}
}
