// Package diskcache keeps what sonde derives from a file (the unwind table
// of an ELF object) on disk between runs, keyed by what names the file's
// content (its build-id), so the next run reads it back instead of
// building it again.
//
// Entries live in one directory ($XDG_CACHE_HOME/sonde, else
// ~/.cache/sonde; SONDE_CACHE=off turns the cache off). Each is one file:
// a header (magic, format version, the generation that wrote it, its
// key), the payload and a CRC-32C of all of it. A file is written to a
// temporary name and renamed, so a reader sees a whole entry or none; it
// is not synced, so a crash may leave a truncated entry, which the
// checksum rejects and the next write replaces. An entry of another
// generation (another sonde build, whose tables may differ) is never
// read. The directory is bounded in size: past the limit, the entries
// used least recently (by modification time, which a hit renews) go.
// Several sondes may share it: every step is a whole-file rename,
// read or unlink.
package diskcache

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultLimit bounds the bytes a cache directory holds.
const DefaultLimit = 256 << 20

// Env is the environment variable that turns the cache off ("off").
const Env = "SONDE_CACHE"

const (
	magic         = "SONDEDC\x00"
	formatVersion = 1
	tempPrefix    = ".tmp-"
	// staleTemp: a temporary file older than this was left by a sonde
	// that died while writing it.
	staleTemp = 10 * time.Minute
)

// Options say where a cache lives and what it may read.
type Options struct {
	Dir   string
	Limit int64 // bytes; 0: DefaultLimit
	// Generation names what writes the entries (a sonde build): entries of
	// another generation are not read.
	Generation string
}

// Cache is a directory of entries. A nil *Cache is a cache that is off:
// every Get misses and Put does nothing. Safe for concurrent use, also by
// several processes.
type Cache struct {
	dir, gen string
	limit    int64

	mu      sync.Mutex
	scanned bool  // total was read from the directory
	total   int64 // bytes of entries in the directory, as far as this process knows
	stats   Stats
}

// Stats count a cache's work in this process.
type Stats struct {
	Hits     int    `json:"hits"`
	Misses   int    `json:"misses"`
	Rejected int    `json:"rejected"` // entries present but unreadable: corrupt, truncated, another version
	Writes   int    `json:"writes"`
	Evicted  int    `json:"evicted"`
	Errors   int    `json:"errors"` // writes that failed
	LastErr  string `json:"last_error,omitempty"`
}

// Open opens (creating it) the cache directory o.Dir. A directory that
// another user owns, or that others may write to, is refused: its entries
// could have been written by anyone.
func Open(o Options) (*Cache, error) {
	if o.Dir == "" {
		return nil, errors.New("opening the table cache: no directory")
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("opening the table cache: %w", err)
	}
	fi, err := os.Lstat(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("opening the table cache: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening the table cache: %s is not a directory", o.Dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("opening the table cache: %s belongs to uid %d, not this user", o.Dir, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("opening the table cache: others may write to %s (mode %v)", o.Dir, fi.Mode().Perm())
	}
	return &Cache{dir: o.Dir, gen: o.Generation, limit: o.Limit}, nil
}

var (
	defaultOnce  sync.Once
	defaultCache *Cache
	defaultErr   error
)

// Default is the cache every part of sonde shares: in $XDG_CACHE_HOME/sonde
// (else ~/.cache/sonde, root's too), DefaultLimit bytes, for this build
// of sonde. nil, with the reason, when SONDE_CACHE=off or the directory
// cannot be used; sonde then builds every table as it would without it.
func Default() (*Cache, error) {
	defaultOnce.Do(func() {
		if defaultErr = CheckEnv(); defaultErr != nil || os.Getenv(Env) == "off" {
			return
		}
		base, err := os.UserCacheDir()
		if err != nil {
			defaultErr = fmt.Errorf("opening the table cache: %w", err)
			return
		}
		defaultCache, defaultErr = Open(Options{Dir: filepath.Join(base, "sonde"), Generation: selfGeneration()})
	})
	return defaultCache, defaultErr
}

// Dir is where the cache keeps its entries ("" when off).
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// name is the file of the entry (kind, key): the kind (a short word) and
// a hash of the generation and key, so another build's entry has another
// name.
func (c *Cache) name(kind, key string) string {
	h := sha256.Sum256([]byte(c.gen + "\x00" + kind + "\x00" + key))
	return filepath.Join(c.dir, kind+"-"+hex.EncodeToString(h[:16]))
}

// Get returns the payload stored under (kind, key), and renews the entry
// (it becomes the most recently used). A missing, unreadable or foreign
// entry is a miss.
func (c *Cache) Get(kind, key string) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	path := c.name(kind, key)
	b, err := readBounded(path, c.limit)
	if err != nil {
		c.count(func(s *Stats) { s.Misses++ })
		return nil, false
	}
	gen, k, payload, err := Decode(b)
	if err != nil || gen != c.gen || k != kind+"\x00"+key {
		c.count(func(s *Stats) { s.Misses++; s.Rejected++ })
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now) // recency for eviction; a failure only ages the entry
	c.count(func(s *Stats) { s.Hits++ })
	return payload, true
}

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a cache entry", path)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if n < len(b) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

func (c *Cache) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

func (c *Cache) fail(err error) {
	c.count(func(s *Stats) { s.Errors++; s.LastErr = err.Error() })
}

// Put stores payload under (kind, key), replacing what was there, then
// evicts the least recently used entries if the directory outgrew its
// limit. Failures (a full disk, a read-only home) are counted in Stats,
// never returned: the cache only saves work.
func (c *Cache) Put(kind, key string, payload []byte) {
	if c == nil {
		return
	}
	b := Encode(c.gen, kind+"\x00"+key, payload)
	if int64(len(b)) > c.limit/8 {
		return // one entry must not push out most of the others
	}
	path := c.name(kind, key)
	if err := writeAtomic(c.dir, path, b); err != nil {
		c.fail(err)
		return
	}
	c.mu.Lock()
	c.stats.Writes++
	if !c.scanned {
		c.mu.Unlock()
		c.evict() // also learns the directory's size
		return
	}
	c.total += int64(len(b))
	over := c.total > c.limit
	c.mu.Unlock()
	if over {
		c.evict()
	}
}

// writeAtomic writes b to a temporary file in dir and renames it to path:
// readers see the old entry or the new one, never part of one.
func writeAtomic(dir, path string, b []byte) error {
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("writing a table cache entry: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing a table cache entry: %w", err)
	}
	return nil
}

// evict reads the directory, removes stale temporary files and, while
// the entries exceed the limit, the least recently used ones, down to
// nine tenths of it (so that the next writes do not each scan again).
func (c *Cache) evict() {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		c.fail(fmt.Errorf("reading the table cache: %w", err))
		return
	}
	type entry struct {
		path  string
		size  int64
		mtime time.Time
	}
	var es []entry
	var total int64
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue // removed meanwhile by another sonde, or not ours
		}
		path := filepath.Join(c.dir, de.Name())
		if strings.HasPrefix(de.Name(), tempPrefix) {
			if time.Since(fi.ModTime()) > staleTemp {
				os.Remove(path)
			}
			continue
		}
		es = append(es, entry{path, fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	evicted := 0
	if total > c.limit {
		slices.SortFunc(es, func(a, b entry) int { return a.mtime.Compare(b.mtime) })
		for _, e := range es {
			if total <= c.limit/10*9 {
				break
			}
			if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			total -= e.size
			evicted++
		}
	}
	c.mu.Lock()
	c.scanned, c.total = true, total
	c.stats.Evicted += evicted
	c.mu.Unlock()
}

// Encode returns an entry's bytes: magic, format version, generation,
// key, payload, each length-prefixed, and a CRC-32C (Castagnoli) of all
// that precedes it.
func Encode(gen, key string, payload []byte) []byte {
	b := make([]byte, 0, len(magic)+4+4+len(gen)+4+len(key)+8+len(payload)+4)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, formatVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(gen)))
	b = append(b, gen...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of Decode.
var (
	ErrNotEntry = errors.New("not a sonde cache entry")
	ErrVersion  = errors.New("cache entry of another format version")
	ErrCorrupt  = errors.New("cache entry truncated or corrupt")
)

// Decode checks an entry written by Encode and returns its parts. The
// payload aliases b.
func Decode(b []byte) (gen, key string, payload []byte, err error) {
	if len(b) < len(magic)+4 || string(b[:len(magic)]) != magic {
		return "", "", nil, ErrNotEntry
	}
	if v := binary.LittleEndian.Uint32(b[len(magic):]); v != formatVersion {
		return "", "", nil, fmt.Errorf("%w: %d, this sonde reads %d", ErrVersion, v, formatVersion)
	}
	if len(b) < len(magic)+4+4 {
		return "", "", nil, ErrCorrupt
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(sum) {
		return "", "", nil, ErrCorrupt
	}
	r := body[len(magic)+4:]
	var g, k, p []byte
	var ok bool
	if g, r, ok = field(r, 4); !ok {
		return "", "", nil, ErrCorrupt
	}
	if k, r, ok = field(r, 4); !ok {
		return "", "", nil, ErrCorrupt
	}
	if p, r, ok = field(r, 8); !ok || len(r) != 0 {
		return "", "", nil, ErrCorrupt
	}
	return string(g), string(k), p, nil
}

// field reads a length-prefixed field (a little-endian length of n bytes).
func field(r []byte, n int) (val, rest []byte, ok bool) {
	if len(r) < n {
		return nil, nil, false
	}
	var l uint64
	if n == 4 {
		l = uint64(binary.LittleEndian.Uint32(r))
	} else {
		l = binary.LittleEndian.Uint64(r)
	}
	r = r[n:]
	if l > uint64(len(r)) {
		return nil, nil, false
	}
	return r[:l], r[l:], true
}

// CheckEnv says, in one line, what is wrong with SONDE_CACHE (nil: unset,
// "on" or "off").
func CheckEnv() error {
	switch v := os.Getenv(Env); v {
	case "", "on", "off":
		return nil
	default:
		return fmt.Errorf("%s=%q: want on or off", Env, v)
	}
}

// selfGeneration names this build of sonde: a hash of its executable's
// build-id notes (Go's and the linker's), which change with its code, so
// that tables an older or newer build made are never read. Without them,
// the executable's size and modification time.
func selfGeneration() string {
	exe, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	h := sha256.New()
	noted := false
	if f, err := elf.Open(exe); err == nil {
		for _, name := range []string{".note.go.buildid", ".note.gnu.build-id"} {
			if s := f.Section(name); s != nil {
				if d, err := s.Data(); err == nil {
					h.Write(d)
					noted = true
				}
			}
		}
		f.Close()
	}
	if fi, err := os.Stat(exe); err == nil && !noted {
		fmt.Fprintf(h, "%d %d", fi.Size(), fi.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
