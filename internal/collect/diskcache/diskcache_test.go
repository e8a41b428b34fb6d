package diskcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T, dir string, limit int64) *Cache {
	t.Helper()
	c, err := Open(Options{Dir: dir, Limit: limit, Generation: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	c := open(t, t.TempDir(), 0)
	if _, ok := c.Get("unwind", "build-id ab"); ok {
		t.Fatal("hit in an empty cache")
	}
	want := bytes.Repeat([]byte("rows"), 1000)
	c.Put("unwind", "build-id ab", want)
	got, ok := c.Get("unwind", "build-id ab")
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("Get after Put: ok %v, %d bytes, want %d", ok, len(got), len(want))
	}
	// Another kind, another key: not the same entry.
	if _, ok := c.Get("symbols", "build-id ab"); ok {
		t.Error("kind ignored")
	}
	if _, ok := c.Get("unwind", "build-id ac"); ok {
		t.Error("key ignored")
	}
	c.Put("unwind", "build-id ab", []byte{}) // replaced, even by nothing
	if got, ok := c.Get("unwind", "build-id ab"); !ok || len(got) != 0 {
		t.Errorf("replaced entry: ok %v, %d bytes", ok, len(got))
	}
	s := c.Stats()
	if s.Hits != 2 || s.Writes != 2 || s.Misses != 3 || s.Rejected != 0 {
		t.Errorf("stats %+v", s)
	}
}

// An entry another build of sonde wrote is not read, though it is intact.
func TestOtherGeneration(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, 0).Put("unwind", "k", []byte("old rows"))
	c2, err := Open(Options{Dir: dir, Generation: "g2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c2.Get("unwind", "k"); ok {
		t.Fatal("read an entry of another generation")
	}
	// Even at the same file name (as if the names collided).
	c1 := open(t, dir, 0)
	b, _ := os.ReadFile(c1.name("unwind", "k"))
	if err := os.WriteFile(c2.name("unwind", "k"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c2.Get("unwind", "k"); ok || c2.Stats().Rejected != 1 {
		t.Fatalf("foreign entry at our name: ok %v, stats %+v", ok, c2.Stats())
	}
}

// Every truncation and every flipped byte of an entry is rejected (the
// checksum), then rebuilt: the next Put replaces it.
func TestCorruptEntries(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 0)
	payload := []byte("a table's bytes, long enough to cover a few fields")
	c.Put("unwind", "k", payload)
	path := c.name("unwind", "k")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Get("unwind", "k"); ok {
			t.Fatalf("%s: read %q", name, got)
		}
	}
	for n := 0; n < len(good); n++ {
		check(fmt.Sprintf("truncated to %d bytes", n), good[:n])
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x5a
		check(fmt.Sprintf("byte %d flipped", i), b)
	}
	check("longer", append(bytes.Clone(good), 0))
	c.Put("unwind", "k", payload)
	if got, ok := c.Get("unwind", "k"); !ok || !bytes.Equal(got, payload) {
		t.Fatalf("rewritten entry: ok %v", ok)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := Encode("g", "k", []byte("p"))
	wrongVersion := bytes.Clone(good)
	binary.LittleEndian.PutUint32(wrongVersion[len(magic):], formatVersion+1)
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrNotEntry},
		{"other_file", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"), ErrNotEntry},
		{"newer_version", wrongVersion, ErrVersion},
		{"header_only", good[:len(magic)+4], ErrCorrupt},
		{"no_checksum", good[:len(good)-4], ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := Decode(tc.b); !errors.Is(err, tc.want) {
				t.Errorf("Decode: %v, want %v", err, tc.want)
			}
		})
	}
	g, k, p, err := Decode(good)
	if err != nil || g != "g" || k != "k" || string(p) != "p" {
		t.Errorf("Decode(good) = %q %q %q %v", g, k, p, err)
	}
}

// A temporary file, whole or half written, is never read as an entry, and
// one left by a sonde that died is removed once it is old.
func TestTempFilesNeverRead(t *testing.T) {
	dir := t.TempDir()
	c := open(t, dir, 1<<20)
	whole := Encode("g1", "unwind\x00k", []byte("rows"))
	// What writeAtomic would rename, before the rename: not an entry yet.
	for i, b := range [][]byte{whole[:len(whole)/2], whole} {
		tmp := filepath.Join(dir, fmt.Sprintf("%s%d", tempPrefix, i))
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.Get("unwind", "k"); ok {
		t.Fatal("read a temporary file")
	}
	old := time.Now().Add(-2 * staleTemp)
	stale := filepath.Join(dir, tempPrefix+"0")
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	c.Put("unwind", "other", []byte("x")) // the first Put scans the directory
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tempPrefix+"1")); err != nil {
		t.Errorf("a recent temporary file (another sonde writing) was removed: %v", err)
	}
}

// The directory stays within its limit; the entries used last stay.
func TestEvictionBound(t *testing.T) {
	dir := t.TempDir()
	const limit = 64 << 10
	c := open(t, dir, limit)
	payload := make([]byte, 4000)
	base := time.Now().Add(-time.Hour)
	for i := 0; i < 100; i++ {
		c.Put("unwind", fmt.Sprint(i), payload)
		// Recency by modification time: give each write its own second,
		// as a long life of runs would.
		ts := base.Add(time.Duration(i) * time.Second)
		_ = os.Chtimes(c.name("unwind", fmt.Sprint(i)), ts, ts)
		if i == 5 {
			// Entry 0 is used again: it becomes the most recent.
			if _, ok := c.Get("unwind", "0"); !ok {
				t.Fatal("entry 0 gone early")
			}
			_ = os.Chtimes(c.name("unwind", "0"), ts.Add(time.Second/2), ts.Add(time.Second/2))
		}
		if n := dirBytes(t, dir); n > limit {
			t.Fatalf("after %d writes: %d bytes in the cache, limit %d", i+1, n, limit)
		}
	}
	if c.Stats().Evicted == 0 {
		t.Fatal("nothing evicted")
	}
	if _, ok := c.Get("unwind", "99"); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, ok := c.Get("unwind", "1"); ok {
		t.Error("an old, unused entry was kept")
	}
	// An entry too large to keep without pushing out most others is not kept.
	c.Put("unwind", "huge", make([]byte, limit/4))
	if _, ok := c.Get("unwind", "huge"); ok {
		t.Error("an entry over an eighth of the limit was kept")
	}
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Two caches on one directory (two sondes), writing and reading the same
// keys at once, only ever read whole entries.
func TestConcurrentSondes(t *testing.T) {
	dir := t.TempDir()
	cs := []*Cache{open(t, dir, 256<<10), open(t, dir, 256<<10)}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cs[w%2]
			for i := 0; i < 200; i++ {
				key := fmt.Sprint(i % 7)
				want := bytes.Repeat([]byte(key), 3000+i%7)
				if i%3 == 0 {
					c.Put("unwind", key, want)
				} else if got, ok := c.Get("unwind", key); ok && !bytes.Equal(got, want) {
					errs <- fmt.Errorf("key %s: read %d bytes of another value", key, len(got))
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := dirBytes(t, dir); n > 256<<10 {
		t.Errorf("%d bytes in the cache", n)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "shared")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: open}); err == nil || !strings.Contains(err.Error(), "others may write") {
		t.Errorf("world-writable directory: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: file}); err == nil {
		t.Error("a file as directory accepted")
	}
	// A cache that is off: every Get misses, Put does nothing.
	var off *Cache
	off.Put("unwind", "k", []byte("x"))
	if _, ok := off.Get("unwind", "k"); ok || off.Dir() != "" || off.Stats() != (Stats{}) {
		t.Error("a nil cache is not off")
	}
}

// A directory that cannot be written (a read-only home) costs nothing
// but a counted error.
func TestUnwritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into a read-only directory")
	}
	dir := t.TempDir()
	c := open(t, dir, 0)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	c.Put("unwind", "k", []byte("x"))
	if s := c.Stats(); s.Errors != 1 || s.LastErr == "" {
		t.Errorf("stats %+v", s)
	}
}

func TestCheckEnv(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "on": true, "off": true, "0": false, "yes": false} {
		t.Setenv(Env, v)
		if err := CheckEnv(); (err == nil) != ok {
			t.Errorf("%s=%q: %v", Env, v, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode("g", "unwind\x00build-id 00", []byte("payload")))
	f.Add(Encode("", "", nil))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		gen, key, payload, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to the same bytes.
		if again := Encode(gen, key, payload); !bytes.Equal(again, b) {
			t.Fatalf("decoded %q %q %q does not re-encode to its input", gen, key, payload)
		}
	})
}
