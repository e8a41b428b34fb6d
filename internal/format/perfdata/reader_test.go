package perfdata

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// The fixtures were recorded by perf 6.1 (see testdata/README.md): work.c
// with a 3:1 split, 2 ms fixed period, call chains.
const workBuildID = "5155a3dd3f9ccaf9d8bab896e29c26039de1b89d"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadFixtures(t *testing.T) {
	cases := []struct {
		file      string
		pipe      bool
		samples   uint64
		event     string
		callchain bool
		tracing   bool
	}{
		{file: "tiny.data", samples: 39, event: "cpu-clock", callchain: true},
		{file: "tiny-pipe.data", pipe: true, samples: 40, event: "cpu-clock", callchain: true},
		{file: "tiny-tp.data", samples: 3, event: "sched:sched_switch", tracing: true},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".data"), func(t *testing.T) {
			data := readFixture(t, tc.file)
			var recs []Record
			var lastTime uint64
			f, err := Read(bytes.NewReader(data), func(r *Record) error {
				if r.Time != 0 {
					if r.Time < lastTime {
						t.Errorf("%s record at %d after one at %d: not time-ordered", RecordName(r.Type), r.Time, lastTime)
					}
					lastTime = r.Time
				}
				recs = append(recs, *r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if f.Pipe != tc.pipe {
				t.Errorf("pipe %v, want %v", f.Pipe, tc.pipe)
			}
			if f.Stats.Samples != tc.samples {
				t.Errorf("%d samples, want %d (perf report's count)", f.Stats.Samples, tc.samples)
			}
			if f.Attrs[0].Name != tc.event {
				t.Errorf("event %q, want %q", f.Attrs[0].Name, tc.event)
			}
			if got := f.Attrs[0].SampleType&SampleCallchain != 0; got != tc.callchain {
				t.Errorf("callchain %v, want %v", got, tc.callchain)
			}
			if f.Hostname != "vm" || f.Arch != "x86_64" || f.OSRelease != "6.18.44-fc-v769" || f.PerfVersion != "6.1.192" ||
				f.NrCPUsOnline != 2 || f.NrCPUsAvail != 2 || len(f.Cmdline) < 3 || f.Cmdline[1] != "record" {
				t.Errorf("features: host %q arch %q release %q version %q cpus %d/%d cmdline %q",
					f.Hostname, f.Arch, f.OSRelease, f.PerfVersion, f.NrCPUsOnline, f.NrCPUsAvail, f.Cmdline)
			}
			if (f.Tracing != nil) != tc.tracing {
				t.Fatalf("tracing data %v, want %v", f.Tracing != nil, tc.tracing)
			}
			if tc.tracing {
				tf, ok := f.Tracing.Formats[f.Attrs[0].Config]
				if !ok || tf.System != "sched" || tf.Format.Name != "sched_switch" {
					t.Errorf("tracepoint %d format %+v", f.Attrs[0].Config, tf)
				}
			}
			if !tc.pipe && !tc.tracing {
				found := false
				for _, b := range f.BuildIDs {
					if strings.HasSuffix(b.Filename, "/work") && fmt.Sprintf("%x", b.ID) == workBuildID {
						found = true
					}
				}
				if !found {
					t.Errorf("build-id of work not in %+v", f.BuildIDs)
				}
			}
			var samples, mmaps, comms int
			for _, r := range recs {
				switch r.Type {
				case RecordSample:
					samples++
					s := r.Sample
					if s.Pid == 0 || s.Time == 0 || s.Period == 0 {
						t.Fatalf("sample without pid, time or period: %+v", s)
					}
					if tc.callchain && (len(s.Callchain) < 2 || s.Callchain[0] < ContextMax) {
						t.Fatalf("call chain %x should start with a context marker", s.Callchain)
					}
					if tc.tracing && len(s.Raw) < 64 {
						t.Fatalf("sched_switch payload of %d bytes", len(s.Raw))
					}
				case RecordMmap, RecordMmap2:
					mmaps++
				case RecordComm:
					comms++
				}
			}
			if uint64(samples) != tc.samples || mmaps == 0 || comms == 0 {
				t.Errorf("handler saw %d samples, %d mmaps, %d comms", samples, mmaps, comms)
			}
		})
	}
}

// TestConvertFixture names the fixture's frames from a build-id cache that
// holds the recorded binary (testdata/work.elf), as perf archive leaves it.
func TestConvertFixture(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(cache, ".build-id", workBuildID[:2], workBuildID[2:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elf"), readFixture(t, "work.elf"), 0o644); err != nil {
		t.Fatal(err)
	}
	// perf's pipe format carries no build-ids: the recorded path is all
	// there is, found here under a --symfs root.
	symfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(symfs, "tmp/pd/fx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(symfs, "tmp/pd/fx/work"), readFixture(t, "work.elf"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiny.data", "tiny-pipe.data"} {
		t.Run(strings.TrimSuffix(name, ".data"), func(t *testing.T) {
			data := readFixture(t, name)
			o := Options{BuildIDDir: cache, Kallsyms: "/nonexistent", SymFS: t.TempDir()}
			if name == "tiny-pipe.data" {
				o.SymFS = symfs
			}
			// A plain reader: the file format is buffered, the pipe streamed.
			p, res, err := Convert(io.MultiReader(bytes.NewReader(data)), o)
			if err != nil {
				t.Fatal(err)
			}
			var a, b, total uint64
			for _, s := range p.Samples {
				total += s.Period
				switch p.FrameName(p.Stacks[s.Stack][0]) {
				case "spin_a":
					a += s.Period
				case "spin_b":
					b += s.Period
				}
			}
			// perf report on the same files: spin_a 58000000 / 60000000,
			// spin_b 20000000 in both.
			wantA := map[string]uint64{"tiny.data": 58000000, "tiny-pipe.data": 60000000}[name]
			if a != wantA || b != 20000000 || total != a+b {
				t.Errorf("spin_a %d spin_b %d of %d, want %d and 20000000", a, b, total, wantA)
			}
			chain := false
			for _, st := range p.Stacks {
				if len(st) >= 2 && p.FrameName(st[0]) == "spin_a" && p.FrameName(st[1]) == "main" {
					chain = true
				}
			}
			if !chain {
				t.Errorf("no main → spin_a chain")
			}
			if p.Meta.Period != 2000000 || !p.Meta.Callchain || p.Meta.Event != "cpu-clock" || p.Meta.Arch != "amd64" || p.Meta.Target != "command" {
				t.Errorf("meta %+v", p.Meta)
			}
			for _, u := range res.Unmatched {
				if strings.HasSuffix(u.Name, "/work") {
					t.Errorf("work unmatched: %+v", u)
				}
			}
			if len(p.Code) == 0 {
				t.Errorf("no machine code kept for annotate")
			}
		})
	}
}

// TestUnmatchedObjects lists objects that could not be found, with the
// number of samples they leave unnamed.
func TestUnmatchedObjects(t *testing.T) {
	p, res, err := Convert(bytes.NewReader(readFixture(t, "tiny.data")), Options{BuildIDDir: t.TempDir(), Kallsyms: "/nonexistent", SymFS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var work *Unmatched
	for i, u := range res.Unmatched {
		if strings.HasSuffix(u.Name, "/work") {
			work = &res.Unmatched[i]
		}
	}
	if work == nil || work.Samples != 39 || work.BuildID != workBuildID || !strings.Contains(work.Reason, "not found") {
		t.Fatalf("unmatched %+v, want work with 39 samples", res.Unmatched)
	}
	warned := false
	for _, w := range p.Meta.Warnings {
		warned = warned || strings.Contains(w, "/work: frames unnamed (39 samples)")
	}
	if !warned {
		t.Errorf("warnings %q do not name work", p.Meta.Warnings)
	}
}

// TestReadCorrupt checks that damaged files fail with one line naming the
// problem, never a panic.
func TestReadCorrupt(t *testing.T) {
	good := readFixture(t, "tiny.data")
	bo := binary.LittleEndian
	dataOff := bo.Uint64(good[40:])
	patch := func(b []byte, off int, v uint64) []byte {
		c := bytes.Clone(b)
		bo.PutUint64(c[off:], v)
		return c
	}
	patch16 := func(b []byte, off int, v uint16) []byte {
		c := bytes.Clone(b)
		bo.PutUint16(c[off:], v)
		return c
	}
	read := func(r io.Reader) error {
		_, _, err := Convert(r, Options{Kallsyms: "/nonexistent"})
		return err
	}
	testutil.Refuses(t, read, []testutil.Damaged{
		{Name: "empty", Data: nil, Want: "reading perf.data header: file ends early"},
		{Name: "not_perf", Data: []byte("SONDE\x00\x00\x01xxxxxxxxxxxxxxxx"), Want: "not a perf.data file"},
		{Name: "old_format", Data: []byte("PERFFILExxxxxxxxxxxxxxxx"), Want: "first format version"},
		{Name: "header_size", Data: patch(good, 8, 12345678), Want: "perf.data header of 12345678 bytes"},
		{Name: "attr_size", Data: patch(good, 16, 3), Want: "attribute entries of 3 bytes"},
		{Name: "attrs_past_end", Data: patch(good, 24, 1<<40), Want: "attributes section"},
		{Name: "data_past_end", Data: patch(good, 48, 1<<30), Want: "corrupt data"},
		{Name: "truncated_before_data", Data: good[:dataOff], Want: "ends before its data section"},
		{Name: "truncated_header", Data: good[:60], Want: "file ends early"},
		{Name: "record_size_zero", Data: patch16(good, int(dataOff)+6, 0), Want: "has size 0"},
		{Name: "record_past_section", Data: patch16(good, int(dataOff)+6, 0xfff8), Want: "runs past the data section"},
		{Name: "compressed", Data: readFixture(t, "tiny-z.data"), Want: "compressed (perf record -z)"},
	})
}

// TestEveryTruncation cuts the fixtures at every length. A prefix that
// ends before the first record fails with one line; any longer one reads
// every sample whose record is whole before the cut (counted here by
// walking the record headers), with the cut warning, as sonde's own data
// files do.
func TestEveryTruncation(t *testing.T) {
	for _, name := range []string{"tiny.data", "tiny-pipe.data", "tiny-tp.data", "killed.data"} {
		data := readFixture(t, name)
		start, end := recordSpan(data)
		for n := 0; n < len(data); n++ {
			f, err := Read(bytes.NewReader(data[:n]), func(*Record) error { return nil })
			if n <= start && !(n == start && start == pipeHeaderSize) {
				if err == nil || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s cut at %d, before its first record at %d: error %v, want one line", name, n, start, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s cut at %d of %d bytes: %v", name, n, len(data), err)
			}
			if want := samplesBefore(data, start, min(n, end)); f.Stats.Samples != want {
				t.Fatalf("%s cut at %d: %d samples, want the %d whole before the cut", name, n, f.Stats.Samples, want)
			}
			atBoundary := f.Pipe && samplesBefore(data, start, n) == samplesBefore(data, start, n+1) && recordEndsAt(data, start, n)
			if !atBoundary && (!f.Cut || !hasWarning(f.Warnings, model.CutWarning)) {
				t.Fatalf("%s cut at %d: no cut warning in %q", name, n, f.Warnings)
			}
		}
	}
}

// recordSpan is where a fixture's records start and end: after the pipe
// header, or the file header's data section (to the end of a killed file).
func recordSpan(data []byte) (start, end int) {
	bo := binary.LittleEndian
	if bo.Uint64(data[8:]) == pipeHeaderSize {
		return pipeHeaderSize, len(data)
	}
	off, size := int(bo.Uint64(data[40:])), int(bo.Uint64(data[48:]))
	if size == 0 {
		return off, len(data)
	}
	return off, off + size
}

// samplesBefore counts the SAMPLE records wholly inside data[start:n].
func samplesBefore(data []byte, start, n int) uint64 {
	var c uint64
	for off := start; off+recordHeaderSize <= n; {
		size := int(binary.LittleEndian.Uint16(data[off+6:]))
		if size < recordHeaderSize || off+size > n {
			break
		}
		if binary.LittleEndian.Uint32(data[off:]) == RecordSample {
			c++
		}
		off += size
	}
	return c
}

// recordEndsAt says whether a record ends exactly at n.
func recordEndsAt(data []byte, start, n int) bool {
	off := start
	for off < n && off+recordHeaderSize <= len(data) {
		off += max(recordHeaderSize, int(binary.LittleEndian.Uint16(data[off+6:])))
	}
	return off == n
}

func hasWarning(ws []string, prefix string) bool {
	for _, w := range ws {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// FuzzRead feeds damaged perf.data to the reader and the model conversion
// (without symbolization, which would read the host's files): an error or
// a valid profile, never a panic.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"tiny.data", "tiny-pipe.data", "tiny-tp.data", "killed.data"} {
		f.Add(readFixture(f, name))
	}
	f.Add(pipeStream(10, 2, 0, 20, 5, 0, 1, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := convert(bytes.NewReader(data), Options{}, false)
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("accepted an invalid profile: %v", verr)
			}
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans lines: %q", err)
		}
	})
}

// TestWriteFuzzSeeds (with -update) writes small seeds for FuzzRead: the
// pipe fixture's first records and a file header whose sections a mutator
// can reach.
func TestWriteFuzzSeeds(t *testing.T) {
	testutil.WriteFuzzSeeds(t, "FuzzRead", func() map[string][]byte {
		pipe := readFixture(t, "tiny-pipe.data")
		good := readFixture(t, "tiny.data")
		dataOff := binary.LittleEndian.Uint64(good[40:])
		return map[string][]byte{
			"pipe_head":   pipe[:min(len(pipe), 1200)],
			"file_head":   good[:min(len(good), int(dataOff)+600)],
			"pipe_header": []byte("PERFILE2\x10\x00\x00\x00\x00\x00\x00\x00"),
			"synthetic":   pipeStream(10, 2, 0, 20, 5, 0, 1, 0),
		}
	})
}

// TestBuildIDCachePathForm finds the object in the cache's other layout,
// ~/.debug/<path>/<build-id>/elf, and refuses a local file whose build-id
// differs from the recorded one.
func TestBuildIDCachePathForm(t *testing.T) {
	cache := t.TempDir()
	dir := filepath.Join(cache, "tmp/pd/fx/work", workBuildID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "elf"), readFixture(t, "work.elf"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := Convert(bytes.NewReader(readFixture(t, "tiny.data")), Options{BuildIDDir: cache, Kallsyms: "/nonexistent", SymFS: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if name := p.FrameName(p.Stacks[p.Samples[0].Stack][0]); !strings.HasPrefix(name, "spin_") {
		t.Errorf("leaf %q, want spin_a or spin_b", name)
	}

	// A different binary at the recorded path: not used.
	symfs := t.TempDir()
	os.MkdirAll(filepath.Join(symfs, "tmp/pd/fx"), 0o755)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(symfs, "tmp/pd/fx/work"), self, 0o755); err != nil {
		t.Fatal(err)
	}
	_, res, err := Convert(bytes.NewReader(readFixture(t, "tiny.data")), Options{BuildIDDir: t.TempDir(), Kallsyms: "/nonexistent", SymFS: symfs})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range res.Unmatched {
		if strings.HasSuffix(u.Name, "/work") && strings.Contains(u.Reason, "has build-id") {
			found = true
		}
	}
	if !found {
		t.Errorf("a binary with another build-id was not refused: %+v", res.Unmatched)
	}
}

// pipeStream builds a perf pipe stream by hand: one event sampling IP, TID
// and TIME, then samples at the given times with 0 standing for a
// FINISHED_ROUND record.
func pipeStream(times ...uint64) []byte {
	bo := binary.LittleEndian
	b := []byte("PERFILE2")
	b = bo.AppendUint64(b, pipeHeaderSize)
	rec := func(typ uint32, body []byte) {
		b = bo.AppendUint32(b, typ)
		b = bo.AppendUint16(b, 0)
		b = bo.AppendUint16(b, uint16(recordHeaderSize+len(body)))
		b = append(b, body...)
	}
	attr := make([]byte, minAttrSize)
	bo.PutUint32(attr[0:], TypeSoftware)
	bo.PutUint32(attr[4:], minAttrSize)
	bo.PutUint64(attr[16:], 1000) // period
	bo.PutUint64(attr[24:], SampleIP|SampleTID|SampleTime)
	rec(RecordHeaderAttr, attr)
	for _, t := range times {
		if t == 0 {
			rec(RecordFinishedRound, nil)
			continue
		}
		var s []byte
		s = bo.AppendUint64(s, 0x1000+t) // ip
		s = bo.AppendUint32(s, 7)        // pid
		s = bo.AppendUint32(s, 7)        // tid
		s = bo.AppendUint64(s, t)        // time
		rec(RecordSample, s)
	}
	return b
}

// TestRoundOrdering releases records like perf's ordered events: at each
// FINISHED_ROUND, sorted, up to the newest time of the round before; a
// record older than what already left goes out late rather than never.
func TestRoundOrdering(t *testing.T) {
	data := pipeStream(10, 2, 0, 20, 5, 0, 1, 0)
	var got []uint64
	f, err := Read(bytes.NewReader(data), func(r *Record) error {
		got = append(got, r.Time)
		if r.Sample.Period != 1000 {
			t.Errorf("period %d, want the attribute's 1000", r.Sample.Period)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{2, 5, 10, 1, 20}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delivery order %v, want %v", got, want)
	}
	if !f.Pipe || f.Stats.Records[RecordFinishedRound] != 3 || f.Stats.Samples != 5 {
		t.Errorf("stats %+v", f.Stats)
	}
	// Unknown record kinds are counted and skipped.
	data = append(data, 200, 0, 0, 0, 0, 0, 12, 0, 1, 2, 3, 4)
	f, err = Read(bytes.NewReader(data), nil)
	if err != nil || f.Stats.Skipped[200] != 1 {
		t.Fatalf("err %v, skipped %v", err, f.Stats.Skipped)
	}
}

// TestUnfinishedRecording reads a file whose perf record was killed: no
// data size, no features; records run to the end of the file.
func TestUnfinishedRecording(t *testing.T) {
	good := readFixture(t, "tiny.data")
	bo := binary.LittleEndian
	off, size := bo.Uint64(good[40:]), bo.Uint64(good[48:])
	b := bytes.Clone(good[:off+size])
	bo.PutUint64(b[48:], 0)
	for i := 72; i < fileHeaderSize; i++ {
		b[i] = 0 // no features
	}
	p, _, err := convert(bytes.NewReader(b), Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 39 || len(p.Meta.Warnings) == 0 || !strings.Contains(p.Meta.Warnings[0], "did not finish") {
		t.Errorf("%d samples, warnings %q", len(p.Samples), p.Meta.Warnings)
	}
	// A real one: perf record killed by SIGKILL 0.8 s in (its header has
	// the feature bits but no feature table, and no data size).
	p, _, err = convert(bytes.NewReader(readFixture(t, "killed.data")), Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 244 || !hasWarning(p.Meta.Warnings, model.CutWarning+": perf record did not finish") {
		t.Errorf("killed.data: %d samples, warnings %q; want 244 and the cut warning", len(p.Samples), p.Meta.Warnings)
	}
}

// TestKsymbol names samples in BPF programs from KSYMBOL records, as perf
// does: the program is object and function; kallsyms is not asked.
func TestKsymbol(t *testing.T) {
	bo := binary.LittleEndian
	var b []byte
	b = append(b, "PERFILE2"...)
	b = bo.AppendUint64(b, pipeHeaderSize)
	rec := func(typ uint32, misc uint16, body []byte) {
		b = bo.AppendUint32(b, typ)
		b = bo.AppendUint16(b, misc)
		b = bo.AppendUint16(b, uint16(recordHeaderSize+len(body)))
		b = append(b, body...)
	}
	attr := make([]byte, minAttrSize)
	bo.PutUint32(attr[0:], TypeSoftware)
	bo.PutUint32(attr[4:], minAttrSize)
	bo.PutUint64(attr[16:], 1000)
	bo.PutUint64(attr[24:], SampleIP|SampleTID|SampleTime)
	rec(RecordHeaderAttr, 0, attr)
	const prog = 0xffffffffc0001000
	var k []byte
	k = bo.AppendUint64(k, prog)
	k = bo.AppendUint32(k, 0x100)
	k = bo.AppendUint16(k, 1) // BPF
	k = bo.AppendUint16(k, 0)
	k = append(k, "bpf_prog_6deef7357e7b4530_test\x00\x00"...)
	rec(RecordKsymbol, 0, k)
	for i, ip := range []uint64{prog + 0x10, prog + 0x20} {
		var s []byte
		s = bo.AppendUint64(s, ip)
		s = bo.AppendUint32(s, 9)
		s = bo.AppendUint32(s, 9)
		s = bo.AppendUint64(s, uint64(100+i))
		rec(RecordSample, MiscKernel, s)
	}
	p, res, err := Convert(bytes.NewReader(b), Options{Kallsyms: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 2 || p.Samples[0].Stack != p.Samples[1].Stack {
		t.Fatalf("samples %+v", p.Samples)
	}
	leaf := p.Stacks[p.Samples[0].Stack][0]
	if p.FrameName(leaf) != "bpf_prog_6deef7357e7b4530_test" || p.DSOName(leaf) != "bpf_prog_6deef7357e7b4530_test" || !p.Kind(leaf).IsKernel() {
		t.Errorf("frame %q in %q (%v)", p.FrameName(leaf), p.DSOName(leaf), p.Kind(leaf))
	}
	if len(res.Unmatched) != 0 {
		t.Errorf("unmatched %+v", res.Unmatched)
	}
}
