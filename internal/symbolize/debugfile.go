package symbolize

import (
	"bytes"
	"context"
	"debug/elf"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ulikunitz/xz"
)

// Fetcher finds a debug file that is not on this machine, by build-id.
type Fetcher interface {
	Debuginfo(ctx context.Context, buildID, name string) (string, error)
}

var (
	fetcherMu sync.Mutex
	fetcher   Fetcher
)

// SetDebuginfod makes OpenELF ask f for the debug file of a binary that
// has no symbol table (or no line table when lines are read) and no local
// debug file; nil asks nobody. The command layer sets it once, from
// DEBUGINFOD_URLS, and only for what runs after a collection: files are
// fetched when frames are named, never while events are taken.
func SetDebuginfod(f Fetcher) {
	fetcherMu.Lock()
	fetcher = f
	fetcherMu.Unlock()
}

// fetchDebugFile asks the debuginfod servers for the debug file of id.
func fetchDebugFile(id, name string) string {
	fetcherMu.Lock()
	f := fetcher
	fetcherMu.Unlock()
	if f == nil || id == "" {
		return ""
	}
	p, err := f.Debuginfo(context.Background(), id, name)
	if err != nil {
		return "" // the fetcher's summary says what it could not find
	}
	return p
}

// findDebugFile looks for path's separate debug file where distributions
// install them: by build-id under DebugDir/.build-id, then by its
// .gnu_debuglink name (beside it, in .debug/, under DebugDir) when the
// link's CRC matches, then DebugDir/path(.debug).
func findDebugFile(f *elf.File, path, id string, o Options) string {
	type cand struct {
		path   string
		crc    uint32
		linked bool // a .gnu_debuglink name: only with the link's CRC
	}
	var cands []cand
	if len(id) > 2 {
		cands = append(cands, cand{path: filepath.Join(o.DebugDir, ".build-id", id[:2], id[2:]+".debug")})
	}
	if name, crc, ok := debugLink(f); ok {
		dir := filepath.Dir(path)
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name), filepath.Join(o.DebugDir, dir, name)} {
			cands = append(cands, cand{path: p, crc: crc, linked: true})
		}
	}
	cands = append(cands, cand{path: filepath.Join(o.DebugDir, path+".debug")}, cand{path: filepath.Join(o.DebugDir, path)})
	for _, c := range cands {
		p := c.path
		if o.Root != "" {
			p = filepath.Join(o.Root, p)
		}
		if p == path {
			continue
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if c.linked && !crcMatches(p, c.crc) {
			continue // a debug file of another build of the same name
		}
		return p
	}
	return ""
}

// debugLink reads .gnu_debuglink: the debug file's name, then (4-aligned)
// the CRC-32 of its contents.
func debugLink(f *elf.File) (string, uint32, bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	end := bytes.IndexByte(data, 0)
	if end <= 0 {
		return "", 0, false
	}
	off := (end + 4) &^ 3
	if off+4 > len(data) {
		return string(data[:end]), 0, false
	}
	return string(data[:end]), f.ByteOrder.Uint32(data[off:]), true
}

// crcMatches checks a debuglink's CRC-32 (the IEEE polynomial, as
// objcopy --add-gnu-debuglink computes it) against the file.
func crcMatches(path string, want uint32) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, fh); err != nil {
		return false
	}
	return h.Sum32() == want
}

// maxMiniDebugInfo bounds the decompressed .gnu_debugdata (a symbol table
// of a few MB at most; more is a corrupt or hostile file).
const maxMiniDebugInfo = 64 << 20

// miniDebugInfo reads the function symbols of an xz-compressed ELF in
// .gnu_debugdata (MiniDebugInfo: the static functions a stripped binary
// dropped, which Fedora keeps for backtraces).
func miniDebugInfo(f *elf.File) []elf.Symbol {
	s := f.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	raw, err := s.Data()
	if err != nil {
		return nil
	}
	r, err := xz.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r, maxMiniDebugInfo+1))
	if err != nil || len(data) > maxMiniDebugInfo {
		return nil
	}
	inner, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	return readFuncs(inner)
}
