package python

import (
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// headerOffsets compiles testdata/pyoffsets.c against inc and runs it.
func headerOffsets(t *testing.T, inc string) map[string]uint64 {
	t.Helper()
	exe := testutil.BuildC(t, t.TempDir(), "pyoffsets", []string{"pyoffsets.c"}, "-DPy_BUILD_CORE", "-I"+inc, "-I"+filepath.Join(inc, "internal"))
	m := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(testutil.Tool(t, exe)), "\n") {
		f := strings.Fields(line)
		v, _ := strconv.ParseUint(f[1], 10, 64)
		m[f[0]] = v
	}
	return m
}

// compare checks l against the header's offsets.
func compare(t *testing.T, l Layout, h map[string]uint64) {
	t.Helper()
	want := map[string]uint16{
		"runtime_interpreters_head": l.RuntimeInterpHead, "interp_threads_head": l.InterpThreadsHead,
		"tstate_next": l.TstateNext, "tstate_frame": l.TstateFrame,
		"frame_previous": l.FramePrevious, "frame_code": l.FrameCode, "frame_instr": l.FrameInstr,
		"code_filename": l.CodeFilename, "code_name": l.CodeName, "code_firstlineno": l.CodeFirstLine,
		"code_linetable": l.CodeLinetable, "bytes_size": l.BytesSize, "bytes_data": l.BytesData,
		"unicode_state": l.UnicodeState, "unicode_length": l.UnicodeLength,
		"unicode_ascii_size": l.UnicodeASCII, "unicode_compact_size": l.UnicodeCompact,
	}
	if l.Minor >= 11 {
		want["tstate_native_thread_id"] = l.TstateTid
		want["code_adaptive"] = l.CodeAdaptive
		want["code_qualname"] = l.CodeQualname
	} else {
		want["tstate_thread_id"] = l.TstateTid
	}
	if l.Minor == 11 || l.Minor == 12 {
		want["cframe_current_frame"] = l.CFrameFrame
	}
	if l.Minor >= 12 {
		want["frame_owner"] = l.FrameOwner
	}
	if l.Minor == 11 {
		want["frame_is_entry"] = l.FrameOwner
	}
	for k, v := range want {
		got, ok := h[k]
		if !ok {
			t.Errorf("3.%d: the headers do not print %s", l.Minor, k)
		} else if uint64(v) != got {
			t.Errorf("3.%d: %s is %d, the headers say %d", l.Minor, k, v, got)
		}
	}
}

// running starts bin on a script that prints what the test asks and
// then sleeps; it returns the process's pid and its first output line.
func running(t *testing.T, bin, script string) (int, string) {
	t.Helper()
	p := testutil.StartPiped(t, bin, "-c", script)
	line, err := p.Line()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return p.Cmd.Process.Pid, strings.TrimSpace(line)
}

// TestOffsetsMatchHeaders: the layout Find gives each interpreter of this
// machine, from sonde's table (3.10–3.12) or the process's own
// _Py_DebugOffsets (3.13), is what the version's headers say.
func TestOffsetsMatchHeaders(t *testing.T) {
	if _, ok := testutil.HaveTool("gcc"); !ok {
		t.Skip("no gcc")
	}
	for _, in := range testutil.Pythons(t) {
		t.Run(in.Bin, func(t *testing.T) {
			pid, _ := running(t, in.Bin, "import time; print('ready', flush=True); time.sleep(60)")
			ms, err := procfs.ReadMaps(pid)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Find(pid, ms)
			if err != nil {
				t.Fatal(err)
			}
			if p.Minor != in.Minor {
				t.Errorf("found 3.%d, want 3.%d", p.Minor, in.Minor)
			}
			if (in.Minor >= 13) != (p.HowFound == "_Py_DebugOffsets") {
				t.Errorf("3.%d: offsets from %s", in.Minor, p.HowFound)
			}
			if p.EvalStart == 0 || p.EvalEnd <= p.EvalStart || p.Runtime == 0 {
				t.Errorf("runtime %#x, eval loop %#x-%#x", p.Runtime, p.EvalStart, p.EvalEnd)
			}
			t.Logf("3.%d in %s: offsets from %s, _PyRuntime at %#x, eval loop %d bytes", p.Minor, p.Path, p.HowFound, p.Runtime, p.EvalEnd-p.EvalStart)
			if in.Include != "" {
				compare(t, p.Layout, headerOffsets(t, in.Include))
			}
		})
	}
}

// TestParseDebugOffsetsRefuses: versions whose _Py_DebugOffsets sonde
// does not know and free-threaded builds get one clear error.
func TestParseDebugOffsetsRefuses(t *testing.T) {
	b := make([]byte, debugOffsets313Size)
	copy(b, DebugCookie)
	b[8+3], b[8+2] = 3, 14 // 3.14
	if _, err := ParseDebugOffsets(b); err == nil || !strings.Contains(err.Error(), "3.14") {
		t.Errorf("3.14: %v", err)
	}
	b[8+2] = 13
	b[16] = 1
	if _, err := ParseDebugOffsets(b); err != ErrFreeThreaded {
		t.Errorf("free-threaded: %v", err)
	}
	if _, err := ParseDebugOffsets([]byte("notpython")); err != ErrNoCookie {
		t.Errorf("no cookie: %v", err)
	}
}

// lineScript prints, for a function of several lines: its code object's
// address, qualname and file, its line table (hex) and first line, each
// instruction's line as co_lines() gives it ("start:end:line" triples in
// bytes), and the addresses of its name and file objects (its tag), then
// sleeps while the test reads the process.
const lineScript = `
import sys, time
class K:
    def f(self, n):
        s = 0
        for i in range(n):
            if i % 3:
                s += i
            else:
                s -= 1
        return [s,
                n]
c = K.f.__code__
print(hex(id(c)), getattr(c, "co_qualname", c.co_name), c.co_filename, c.co_linetable.hex(), c.co_firstlineno,
      ",".join("%d:%d:%s" % (a, b, l) for a, b, l in c.co_lines()), hex(id(c.co_name)), hex(id(c.co_filename)), flush=True)
time.sleep(60)
`

// TestReaderNamesCodeObjects: a live interpreter's code object is named
// (qualname where the version has one, file) from its memory, and every
// instruction's line matches co_lines(), the interpreter's own reading of
// its line table.
func TestReaderNamesCodeObjects(t *testing.T) {
	for _, in := range testutil.Pythons(t) {
		t.Run(in.Bin, func(t *testing.T) {
			pid, line := running(t, in.Bin, lineScript)
			f := strings.Fields(line)
			if len(f) != 8 {
				t.Fatalf("script printed %q", line)
			}
			hexAddr := func(s string) uint64 {
				v, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
				return v
			}
			addr, tag := hexAddr(f[0]), Tag(hexAddr(f[6]), hexAddr(f[7]))
			table, _ := hex.DecodeString(f[3])
			first, _ := strconv.Atoi(f[4])
			r := NewReader()
			checked := 0
			for _, rng := range strings.Split(f[5], ",") {
				p := strings.Split(rng, ":")
				a, _ := strconv.Atoi(p[0])
				b, _ := strconv.Atoi(p[1])
				want := 0
				if p[2] != "None" {
					want, _ = strconv.Atoi(p[2])
				}
				for off := a; off < b; off += 2 {
					fr, err := r.Frame(pid, Encode(addr, tag, off/2))
					if err != nil {
						t.Fatal(err)
					}
					if fr.Func != f[1] || fr.File != f[2] {
						t.Fatalf("named %q in %q, want %q in %q", fr.Func, fr.File, f[1], f[2])
					}
					if fr.Line != want {
						t.Errorf("byte %d: line %d, co_lines says %d", off, fr.Line, want)
					}
					var got int
					if in.Minor >= 11 {
						got = LineOf311(table, first, off/2)
					} else {
						got = LineOf310(table, first, off)
					}
					if got != want {
						t.Errorf("byte %d: table from the script: line %d, want %d", off, got, want)
					}
					checked++
				}
			}
			t.Logf("3.%d: %d instructions' lines match co_lines()", in.Minor, checked)
		})
	}
}

// TestEncoding: the walker's Python frame values and the pid that ends
// a stack holding them (sonde_python.h) decode as encoded, and no native
// address or perf context mark reads as one.
func TestEncoding(t *testing.T) {
	v := Encode(0x7f12_3456_7890, 9, 41)
	if !IsFrame(v) {
		t.Fatalf("%#x is not a Python frame", v)
	}
	if code, tag, index := Decode(v); code != 0x7f12_3456_7890 || tag != 9 || index != 41 {
		t.Errorf("decoded %#x, tag %d, %d", code, tag, index)
	}
	if _, ok := Pid(v); ok {
		t.Errorf("a frame reads as the pid value")
	}
	end := uint64(1)<<63 | 0x3fff<<48 | 4242
	if pid, ok := Pid(end); !ok || pid != 4242 || StackPid([]uint64{v, end}) != 4242 {
		t.Errorf("pid value %#x: %d %v", end, pid, ok)
	}
	for _, native := range []uint64{0x401000, 0x7fff_ffff_f000, ^uint64(0) - 4095, ^uint64(0) - 1} {
		if IsFrame(native) {
			t.Errorf("%#x reads as a Python frame", native)
		}
	}
}

// TestFindRefusesOldVersions: a CPython older than 3.10 (pyenv's 3.9
// here) gets one line saying which versions are walked.
func TestFindRefusesOldVersions(t *testing.T) {
	bins, _ := filepath.Glob(filepath.Join(testutil.PyenvRoot(), "versions", "3.9.*", "bin", "python3.9"))
	if len(bins) == 0 {
		t.Skip("no pyenv 3.9 here")
	}
	pid, _ := running(t, bins[0], "import time; print('ready', flush=True); time.sleep(60)")
	ms, err := procfs.ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Find(pid, ms)
	if err == nil || !strings.Contains(err.Error(), "CPython 3.9 is not supported (3.10–3.13 are)") {
		t.Errorf("3.9: %v", err)
	}
	t.Log(err)
}
