package unwindtable

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/diskcache"
)

// Key names a file's content: its GNU build-id when it has one (so the same
// library seen through different paths, containers or bind mounts shares one
// table), otherwise its identity on disk.
type Key struct {
	BuildID string // hex; empty when the file has none
	Dev     uint64
	Ino     uint64
	Mtime   int64 // ns
	Size    int64
}

func (k Key) String() string {
	if k.BuildID != "" {
		return "build-id " + k.BuildID
	}
	return fmt.Sprintf("dev %d inode %d mtime %d size %d", k.Dev, k.Ino, k.Mtime, k.Size)
}

type identity struct {
	dev, ino    uint64
	mtime, size int64
}

// Cache builds each file's table once and shares it between every process
// that maps the file. Failures are cached too (a file without unwind info is
// not re-read on every mmap). Safe for concurrent use; a table is built by the
// first caller while later callers for the same file wait for it.
//
// With a disk cache (WithDisk), a table not held is first looked for on
// disk, under its key, and a table built is stored there for the next run.
type Cache struct {
	mu      sync.Mutex
	byKey   map[Key]*cacheEntry
	byIdent map[identity]Key // avoids re-reading the build-id of a file already seen
	disk    *diskcache.Cache
	stats   CacheStats
}

// CacheStats counts the cache's work.
type CacheStats struct {
	Files    int // distinct files (keys) held
	Hits     int
	Builds   int
	Failed   int   // builds that returned an error
	Bytes    int64 // encoded size of every table held
	FromDisk int   // tables read from the disk cache instead of built
	// BuildTime is the time spent building tables (opening the ELF file
	// and compiling its CFI); ReadTime reading and decoding them from
	// the disk cache.
	BuildTime, ReadTime time.Duration
}

// diskKind names unwind tables among the disk cache's entries.
const diskKind = "unwind"

// WithDisk makes c read and write tables in d (nil: none) and returns c.
func (c *Cache) WithDisk(d *diskcache.Cache) *Cache {
	c.disk = d
	return c
}

type cacheEntry struct {
	done chan struct{}
	tab  *Table
	err  error
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{byKey: map[Key]*cacheEntry{}, byIdent: map[identity]Key{}}
}

// Get returns the table of the ELF file at path (for a traced process, a path
// such as /proc/PID/map_files/… or /proc/PID/root/…), building it on first use.
func (c *Cache) Get(path string) (*Table, Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Key{}, fmt.Errorf("opening %s for its unwind table: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, Key{}, fmt.Errorf("stat %s: %w", path, err)
	}
	id := identity{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino)
	}

	c.mu.Lock()
	key, seen := c.byIdent[id]
	c.mu.Unlock()

	var ef *elf.File
	if !seen {
		ef, err = elf.NewFile(f)
		if err != nil {
			return nil, Key{}, fmt.Errorf("reading ELF %s: %w", path, err)
		}
		defer ef.Close()
		key = Key{BuildID: BuildID(ef)}
		if key.BuildID == "" {
			key = Key{Dev: id.dev, Ino: id.ino, Mtime: id.mtime, Size: id.size}
		}
	}

	c.mu.Lock()
	c.byIdent[id] = key
	e, ok := c.byKey[key]
	if ok {
		c.stats.Hits++
		c.mu.Unlock()
		<-e.done
		return e.tab, key, e.err
	}
	e = &cacheEntry{done: make(chan struct{})}
	c.byKey[key] = e
	c.mu.Unlock()

	built := false
	t0 := time.Now()
	if e.tab = c.fromDisk(key); e.tab == nil {
		built = true
		if ef == nil {
			ef, err = elf.NewFile(f)
			if err == nil {
				defer ef.Close()
			}
		}
		if err == nil {
			e.tab, e.err = BuildELF(ef)
		} else {
			e.err = err
		}
		if e.err != nil {
			e.err = fmt.Errorf("unwind table of %s: %w", path, e.err)
		}
	}
	close(e.done)
	if built && e.err == nil {
		c.toDisk(key, e.tab)
	}

	took := time.Since(t0)
	c.mu.Lock()
	if built {
		c.stats.Builds++
		c.stats.BuildTime += took
	} else {
		c.stats.FromDisk++
		c.stats.ReadTime += took
	}
	if e.err != nil {
		c.stats.Failed++
	} else {
		c.stats.Bytes += int64(e.tab.Bytes())
	}
	c.mu.Unlock()
	return e.tab, key, e.err
}

// fromDisk reads the table of key from the disk cache (nil when there is
// none, or its entry does not decode: it is then built and replaced).
func (c *Cache) fromDisk(key Key) *Table {
	b, ok := c.disk.Get(diskKind, key.String())
	if !ok {
		return nil
	}
	t, err := UnmarshalTable(b)
	if err != nil {
		return nil
	}
	return t
}

// toDisk stores a table built for key in the disk cache.
func (c *Cache) toDisk(key Key, t *Table) {
	if c.disk == nil {
		return
	}
	if b, err := t.MarshalBinary(); err == nil {
		c.disk.Put(diskKind, key.String(), b)
	}
}

// Forget drops a file's table, e.g. when no traced process maps it any more.
func (c *Cache) Forget(key Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return
	}
	select {
	case <-e.done:
		if e.tab != nil {
			c.stats.Bytes -= int64(e.tab.Bytes())
		}
	default:
		return // still building: the builder accounts for it
	}
	delete(c.byKey, key)
	for id, k := range c.byIdent {
		if k == key {
			delete(c.byIdent, id)
		}
	}
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Files = len(c.byKey)
	return s
}

// BuildID returns the hex GNU build-id of an ELF file, or "" if it has none.
func BuildID(f *elf.File) string {
	var notes [][]byte
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if d, err := s.Data(); err == nil {
			notes = append(notes, d)
		}
	}
	if len(notes) == 0 {
		for _, p := range f.Progs {
			if p.Type != elf.PT_NOTE || p.Filesz > 1<<16 {
				continue
			}
			d := make([]byte, p.Filesz)
			if _, err := p.ReadAt(d, 0); err == nil {
				notes = append(notes, d)
			}
		}
	}
	for _, d := range notes {
		r := &buf{b: d, order: f.ByteOrder}
		for r.off+12 <= len(d) {
			nameSz, descSz, typ := r.u32(), r.u32(), r.u32()
			name := r.bytes(uint64(nameSz+3) &^ 3)
			desc := r.bytes(uint64(descSz+3) &^ 3)
			if r.err != nil {
				break
			}
			if typ == 3 && nameSz == 4 && string(name[:3]) == "GNU" && int(descSz) <= len(desc) { // NT_GNU_BUILD_ID
				return hex.EncodeToString(desc[:descSz])
			}
		}
	}
	return ""
}
