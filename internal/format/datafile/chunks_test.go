package datafile

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/model/modeltest"
)

// grow replays a profile as a recording would build it: the tables grow,
// samples arrive, and every k samples a chunk is written and the samples
// dropped from memory.
func grow(t *testing.T, full *model.Profile, k int, w interface {
	Chunk(*model.Profile) error
	Finish(*model.Profile) error
}, finish bool) {
	t.Helper()
	p := &model.Profile{Meta: full.Meta}
	// Tables appear in two steps, as if the second half of the stacks was
	// first seen after the first chunk.
	half := len(full.Stacks) / 2
	p.Threads = append(p.Threads, full.Threads[0])
	p.Threads[0].Comm = "sonde-child" // renamed by exec later
	p.DSOs, p.Funcs, p.Files, p.Locs = full.DSOs, full.Funcs, full.Files, full.Locs
	p.Stacks = append(p.Stacks, full.Stacks[:half]...)
	for i, s := range full.Samples {
		if int(s.Stack) >= len(p.Stacks) {
			p.Stacks = append(p.Stacks, full.Stacks[len(p.Stacks):]...)
		}
		if int(s.Thread) >= len(p.Threads) {
			p.Threads = append(p.Threads, full.Threads[len(p.Threads):]...)
			p.Threads[0].Comm = full.Threads[0].Comm
		}
		p.Samples = append(p.Samples, s)
		if (i+1)%k == 0 {
			if err := w.Chunk(p); err != nil {
				t.Fatal(err)
			}
			p.Samples = p.Samples[:0]
		}
	}
	p.Code = full.Code
	if finish {
		if err := w.Finish(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChunksRoundTrip(t *testing.T) {
	full := modeltest.Sample()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	grow(t, full, 97, w, true)
	if w.Chunks() < 5 {
		t.Fatalf("only %d chunks", w.Chunks())
	}
	q, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, q) {
		t.Errorf("chunked round trip changed the profile:\nthreads %+v\nwant    %+v\n%d vs %d samples", q.Threads, full.Threads, len(q.Samples), len(full.Samples))
	}
	// Grouped reading sees every chunk's samples.
	g, err := ReadWith(bytes.NewReader(buf.Bytes()), ReadOptions{Group: true})
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, x := range g.Groups {
		n += x.Count
	}
	if n != uint64(len(full.Samples)) {
		t.Errorf("grouped read counts %d samples, want %d", n, len(full.Samples))
	}
}

// A file cut anywhere reads back every complete chunk before the cut and
// says it was cut; one cut inside its first chunk is an error.
func TestChunksCut(t *testing.T) {
	full := modeltest.Sample()
	var buf bytes.Buffer
	grow(t, full, 100, NewWriter(&buf), false)
	b := buf.Bytes()
	p, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 800 || !strings.HasPrefix(p.Meta.Warnings[len(p.Meta.Warnings)-1], CutWarning) {
		t.Errorf("unfinished file: %d samples, warnings %q", len(p.Samples), p.Meta.Warnings)
	}
	last := 0
	for cut := len(b) - 1; cut > 12; cut -= 7 {
		p, err := Read(bytes.NewReader(b[:cut]))
		if err != nil {
			if !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			continue
		}
		if len(p.Samples)%100 != 0 || len(p.Samples) > 800 {
			t.Errorf("cut at %d: %d samples, not whole chunks", cut, len(p.Samples))
		}
		if last = len(p.Samples); len(p.Meta.Warnings) == 0 {
			t.Errorf("cut at %d: no warning", cut)
		}
	}
	_ = last
}

func TestCreateAndCheckPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.data")
	os.WriteFile(path, []byte("old"), 0o644)
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Old != path+".old" {
		t.Errorf("old file kept as %q", f.Old)
	}
	full := modeltest.Sample()
	grow(t, full, 300, f, true)
	q, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Samples) != len(full.Samples) {
		t.Errorf("%d samples, want %d", len(q.Samples), len(full.Samples))
	}
	if b, _ := os.ReadFile(path + ".old"); string(b) != "old" {
		t.Errorf("the old file was not kept")
	}
	for _, c := range []struct{ path, want string }{
		{"", "no output file"},
		{dir, "is a directory"},
		{filepath.Join(dir, "nodir", "x.data"), "no such file"},
		{filepath.Join(path, "x.data"), "not a directory"},
	} {
		if err := CheckPath(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPath(%q) = %v, want %q", c.path, err, c.want)
		}
		if err := WriteFile(c.path, full); err == nil {
			t.Errorf("WriteFile(%q) succeeded", c.path)
		}
	}
	// WriteFile leaves no temporary files behind.
	if err := WriteFile(filepath.Join(dir, "b.data"), full); err != nil {
		t.Fatal(err)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	m2, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(m)+len(m2) > 0 {
		t.Errorf("temporary files left: %v %v", m, m2)
	}
}

// /dev/null as the output is written to, never replaced by a regular file
// (a rename over it would delete the device for the whole machine).
func TestSpecialOutputsKept(t *testing.T) {
	before, err := os.Stat("/dev/null")
	if err != nil || before.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/null character device here")
	}
	full := modeltest.Sample()
	if err := WriteFile("/dev/null", full); err != nil {
		t.Fatalf("WriteFile(/dev/null): %v", err)
	}
	f, err := Create("/dev/null")
	if err != nil {
		t.Fatalf("Create(/dev/null): %v", err)
	}
	grow(t, full, 300, f, true)
	if f.Old != "" {
		t.Errorf("/dev/null was moved to %s", f.Old)
	}
	after, err := os.Stat("/dev/null")
	if err != nil || after.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v %v", after.Mode(), err)
	}
	// A link is followed: the file it points to is replaced, the link kept.
	dir := t.TempDir()
	target := filepath.Join(dir, "real.data")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.data")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, full); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
	if _, err := ReadFile(target); err != nil {
		t.Errorf("the link's target was not written: %v", err)
	}
}

// ChunkOffsets finds every chunk's start: a file cut there reads back
// exactly the chunks before the cut.
func TestChunkOffsets(t *testing.T) {
	full := modeltest.Sample()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	grow(t, full, 100, w, false)
	b := buf.Bytes()
	offs, err := ChunkOffsets(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != w.Chunks()+1 || offs[len(offs)-1] != int64(len(b)) {
		t.Fatalf("offsets %v for %d chunks in %d bytes", offs, w.Chunks(), len(b))
	}
	for i, o := range offs[1:] {
		p, err := Read(bytes.NewReader(b[:o]))
		if err != nil {
			t.Fatalf("cut after chunk %d (%d bytes): %v", i+1, o, err)
		}
		if len(p.Samples) != 100*(i+1) {
			t.Errorf("cut after chunk %d: %d samples, want %d", i+1, len(p.Samples), 100*(i+1))
		}
	}
	if _, err := ChunkOffsets(bytes.NewReader(b[:offs[2]+5])); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a file cut inside a chunk: %v, want truncated", err)
	}
	if _, err := ChunkOffsets(strings.NewReader("hello")); err == nil {
		t.Error("text has no chunks: no error")
	}
}
