package unwindtable

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/diskcache"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// codecFiles are tables of every shape: large C libraries, arm64 (a
// synthesized PLT), a Go binary (frame-pointer and stop rows), the test's
// own gcc output without a build-id.
func codecFiles(t *testing.T) []string {
	dir := t.TempDir()
	files := []string{gcc(t, dir, "noid", "-O2", "-Wl,--build-id=none")}
	for _, p := range []string{libcX86, python311, "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "/usr/aarch64-linux-gnu/lib/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			files = append(files, p)
		}
	}
	if exe, err := os.Executable(); err == nil {
		files = append(files, exe) // a Go binary
	}
	return files
}

// TestCodecRoundTrip: every table decodes to what was encoded, field
// for field, and its rows take a fraction of their wire form.
func TestCodecRoundTrip(t *testing.T) {
	for _, path := range codecFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := Build(testutil.Open(t, path))
			if err != nil {
				t.Fatal(err)
			}
			b, err := want.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := UnmarshalTable(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded table differs: %d rows, want %d; stats %+v, want %+v", len(got.Rows), len(want.Rows), got.Stats, want.Stats)
			}
			t.Logf("%d rows: %d bytes encoded, %d in the rows' wire form", len(want.Rows), len(b), want.Bytes())
			if len(b) > want.Bytes()/2 {
				t.Errorf("%d bytes encoded for %d bytes of rows", len(b), want.Bytes())
			}
		})
	}
}

// TestCodecCorrupt: every truncation of an encoded table, and bytes
// changed where they break an invariant, are errors (the disk cache's
// checksum catches random damage first; this is the second line).
func TestCodecCorrupt(t *testing.T) {
	tab, err := Build(testutil.Open(t, gcc(t, t.TempDir(), "small", "-O2")))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := tab.MarshalBinary()
	for n := 0; n < len(good); n++ {
		if _, err := UnmarshalTable(good[:n]); !errors.Is(err, ErrBadTable) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(good), err)
		}
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0xff
		if got, err := UnmarshalTable(b); err == nil {
			// Some bytes are free (a pc delta, a counter): what decodes
			// must still be a table the walker can use.
			checkInvariants(t, got)
		}
	}
	if _, err := UnmarshalTable(append(bytes.Clone(good), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	v := bytes.Clone(good)
	v[0] = codecVersion + 1
	if _, err := UnmarshalTable(v); !errors.Is(err, ErrBadTable) {
		t.Errorf("another codec version: %v", err)
	}
}

func checkInvariants(t *testing.T, tab *Table) {
	t.Helper()
	if len(tab.Rows) == 0 {
		t.Fatal("a table without rows decoded")
	}
	for i, r := range tab.Rows {
		if i > 0 && r.PC <= tab.Rows[i-1].PC {
			t.Fatalf("row %d: pc %#x after %#x", i, r.PC, tab.Rows[i-1].PC)
		}
		if r.Kind > KindFPSwitch {
			t.Fatalf("row %d: kind %d", i, r.Kind)
		}
	}
}

// TestCacheOnDisk: a second cache (the next sonde run) reads the table
// the first one built from disk, equal to a fresh build; a corrupt entry
// is rebuilt and replaced; a cache without a disk builds.
func TestCacheOnDisk(t *testing.T) {
	dir := t.TempDir()
	bin := gcc(t, dir, "prog", "-O2")
	disk := func() *diskcache.Cache {
		d, err := diskcache.Open(diskcache.Options{Dir: filepath.Join(dir, "cache"), Generation: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := NewCache().WithDisk(disk())
	t1, k1, err := first.Get(bin)
	if err != nil {
		t.Fatal(err)
	}
	if s := first.Stats(); s.Builds != 1 || s.FromDisk != 0 {
		t.Fatalf("first run: %+v", s)
	}
	second := NewCache().WithDisk(disk())
	t2, k2, err := second.Get(bin)
	if err != nil {
		t.Fatal(err)
	}
	if s := second.Stats(); s.Builds != 0 || s.FromDisk != 1 || k2 != k1 {
		t.Fatalf("second run: %+v, key %v want %v", s, k2, k1)
	}
	if !reflect.DeepEqual(t1, t2) {
		t.Fatal("the table read from disk differs from the one built")
	}

	// Damage every entry: the next run builds again and rewrites them.
	des, _ := os.ReadDir(filepath.Join(dir, "cache"))
	for _, de := range des {
		p := filepath.Join(dir, "cache", de.Name())
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, b[:len(b)/2], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	third := NewCache().WithDisk(disk())
	t3, _, err := third.Get(bin)
	if err != nil || !reflect.DeepEqual(t3, t1) {
		t.Fatalf("after damage: %v", err)
	}
	if s := third.Stats(); s.Builds != 1 || s.FromDisk != 0 {
		t.Fatalf("after damage: %+v", s)
	}
	fourth := NewCache().WithDisk(disk())
	if _, _, err := fourth.Get(bin); err != nil || fourth.Stats().FromDisk != 1 {
		t.Fatalf("the damaged entry was not replaced: %v, %+v", err, fourth.Stats())
	}
	// The binary rebuilt at the same path: its build-id (a hash of the
	// content) is a new key, never the old table.
	bin2 := gcc(t, dir, "prog", "-O0")
	fifth := NewCache().WithDisk(disk())
	if _, k5, err := fifth.Get(bin2); err != nil || k5 == k1 || fifth.Stats().Builds != 1 {
		t.Fatalf("rebuilt binary: key %v (was %v), %v, %+v", k5, k1, err, fifth.Stats())
	}
}

// FuzzUnmarshalTable: no input panics or allocates beyond its size, and
// what decodes keeps the walker's invariants and re-encodes to itself.
func FuzzUnmarshalTable(f *testing.F) {
	for _, path := range []string{libcX86, "/usr/aarch64-linux-gnu/lib/libc.so.6"} {
		ef, err := os.Open(path)
		if err != nil {
			continue
		}
		tab, err := Build(ef)
		ef.Close()
		if err != nil {
			continue
		}
		tab.Rows = tab.Rows[:64]
		b, _ := tab.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{codecVersion, byte(ArchX86_64), 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := UnmarshalTable(b)
		if err != nil {
			return
		}
		checkInvariants(t, tab)
		again, _ := tab.MarshalBinary()
		if _, err := UnmarshalTable(again); err != nil {
			t.Fatalf("a decoded table does not decode again: %v", err)
		}
	})
}

// BenchmarkCodec: building python3's table from its file against
// reading it back from its encoded form (what a warm start does instead).
func BenchmarkCodec(b *testing.B) {
	f, err := os.Open(python311)
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	tab, err := Build(f)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := tab.MarshalBinary()
	b.Run("build", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := Build(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for i := 0; i < b.N; i++ {
			if _, err := UnmarshalTable(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			tab.MarshalBinary()
		}
	})
}
