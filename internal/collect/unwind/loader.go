package unwind

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/diskcache"
	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/collect/python"
	"github.com/sonde-dev/sonde/internal/collect/unwindtable"
)

// Loader keeps the walker's maps in step with the traced processes: one
// table per file (shared by every process mapping it), one mapping list per
// process. Safe for concurrent use.
type Loader struct {
	m     Maps
	files struct {
		Files *ebpf.Map `ebpf:"unwind_files"` // see fileEntry
	}
	cache *unwindtable.Cache
	rules unwindtable.Rules

	mu           sync.Mutex
	rulesWritten int
	tables       map[unwindtable.Key]*loaded
	vdsos        map[unwindtable.Key]*unwindtable.Table
	procs        map[uint32]*proc
	next, cap    uint32             // rows: next unused index, capacity
	free         []span             // rows released by tables no process maps any more
	used         map[span]bool      // every run ever given to a table (alloc)
	idle         idleTables         // built tables no process maps now
	exits        map[uint32]uint32  // pid → exits seen (Drop), so a Load racing an exit is undone
	execGen      map[uint32]uint32  // pid → exec notices seen, so a Load of the image before is not kept
	names        map[fileKey]string // the path of every file in unwind_files, for MAP notices
	// owner is the table each unwind_files entry holds now: an inode a
	// deleted file had is reused by a new file, whose table then takes the
	// key, and the old table's eviction must not delete the new entry.
	owner map[fileKey]*loaded
	found map[uint32][]mapping // pid → mappings the walker found in the kernel (MAP notices)
	stats Stats

	ring    *bpfskel.Ring
	pending chan uint32 // processes to load, read by one goroutine
	// execs are processes that just exec'd, read by a goroutine of their
	// own: a new process may live a few milliseconds, and must not wait
	// behind the tables of the long-running ones a system-wide run meets
	// first (a large library's take hundreds of milliseconds to build).
	execs chan uint32
	done  chan struct{}
	// settled: no stack will be walked any more (Settle); what is still
	// queued is not loaded.
	settled atomic.Bool

	// keep: walked stacks move to user space every DrainEvery (KeepStacks).
	keep                    bool
	kept                    keptStacks
	drainStop, drainStopped chan struct{}
	drainNow                chan struct{} // the walker's UNWIND_NOTICE_FULL

	// Only, when set, is the one process the tool traces: notices about
	// others (exec and exit are seen system-wide) are ignored.
	Only int
	tree int // FollowTree's root

	// NoInterp turns off interpreter frames (CPython): set before Start.
	NoInterp bool
	// onMaps gets every process's mappings as Load reads them (WatchMaps).
	onMaps  func(pid int, ms []procfs.Mapping)
	py      pyMaps
	pyNames *python.Reader // names Python frames as stacks arrive
	pyKnown map[uint32]bool
}

// WatchMaps hands fn the mappings of each process as the loader reads
// them: when the walker first meets it, at its exec, and again when a
// stack leaves what was read (a library mapped later). A tool whose
// stacks are named at the end keeps them there for processes that exit
// before it (profile): the kernel's notices say when, so nothing polls
// /proc or the tool's maps. fn must not modify ms, and may be called
// from several goroutines at once. Call it before the tool is opened.
func (l *Loader) WatchMaps(fn func(pid int, ms []procfs.Mapping)) {
	l.onMaps = fn
}

// FollowTree ignores exec notices of processes that do not descend from
// root (exec is seen system-wide; `record -- CMD` samples only CMD's
// tree, whose samples ask for any process the exec notice skipped).
// Call it before Start's notices matter: before the command runs.
func (l *Loader) FollowTree(root int) {
	l.mu.Lock()
	l.tree = root
	l.mu.Unlock()
}

type span struct{ first, count uint32 }

type loaded struct {
	span
	bytes int // the table's size in memory
	refs  int
	files []fileKey // its entries in unwind_files
}

// proc is what the loader knows of one process: its executable mappings
// (kept after exit, so stacks read at the end still name their files).
type proc struct {
	maps []mapping
	keys []unwindtable.Key // tables it holds a reference to
	gone bool
}

type mapping struct {
	start, end, offset uint64
	path               string
	table              bool // rows loaded for it
}

// Stats count the loader's work.
type Stats struct {
	Processes   int           `json:"processes_loaded"`
	Files       int           `json:"files_loaded"`
	Rows        uint32        `json:"rows_loaded"`
	RowBytes    uint64        `json:"row_bytes"`
	NoInfo      int           `json:"files_without_unwind_info"`
	RowsFull    int           `json:"files_not_loaded_rows_full"`
	Mappings    int           `json:"mappings_over_limit"`
	Notices     int           `json:"notices"`
	Reloads     int           `json:"reloads"`
	LoadTime    time.Duration `json:"load_time_ns"`
	LoadErrors  int           `json:"load_errors"`
	LastLoadErr string        `json:"last_load_error,omitempty"`
	// TablesBuilt were built from their files' .eh_frame; TablesCached
	// were read from the disk cache (internal/collect/diskcache) instead.
	TablesBuilt  int         `json:"tables_built"`
	TablesCached int         `json:"tables_cached"`
	Python       PythonStats `json:"python"` // CPython processes walked, refused
}

// New returns a loader for a tool's walker maps, whose rows map holds
// capacity rows (what Configure set).
func New(m Maps, capacity uint32) *Loader {
	disk, _ := diskcache.Default() // off, or unusable: every table is built
	return &Loader{m: m, cache: unwindtable.NewCache().WithDisk(disk), idle: idleTables{limit: IdleTableBytes}, tables: map[unwindtable.Key]*loaded{},
		procs: map[uint32]*proc{}, vdsos: map[unwindtable.Key]*unwindtable.Table{}, cap: capacity,
		pyNames: python.NewReader()}
}

// Start reads the walker's notices and loads (or drops) the processes
// they name, on a goroutine, until Stop.
func (l *Loader) Start() error {
	l.pending = make(chan uint32, 1024)
	l.execs = make(chan uint32, 1024)
	l.done = make(chan struct{}, 2)
	r, err := bpfskel.ReadRingWoken(l.m.Notices, l.notice) // unwind_notice writes with default flags
	if err != nil {
		return fmt.Errorf("reading the unwinder's notices: %w", err)
	}
	l.ring = r
	go l.work(l.pending)
	go l.work(l.execs)
	if l.keep {
		l.drainStop, l.drainStopped, l.drainNow = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		go l.drainLoop(l.drainStop, l.drainStopped)
	}
	return nil
}

// Settle says no stack will be walked any more (a recording's events are
// off): processes still queued are not loaded, since a table loaded now
// serves no walk and only delays the end (the new processes a
// system-wide recording met in its last moments). A tool that names
// exited processes from what the loader read (Exited) does not settle.
func (l *Loader) Settle() { l.settled.Store(true) }

// Stop ends the notice reader; call it after the programs are detached.
func (l *Loader) Stop() {
	if l.ring == nil {
		return
	}
	if l.drainStop != nil {
		close(l.drainStop)
		<-l.drainStopped
		l.drainStop = nil
	}
	l.ring.Stop()
	l.ring = nil
	close(l.pending)
	close(l.execs)
	<-l.done
	<-l.done
}

func (l *Loader) notice(raw []byte) {
	n := bpfskel.View[noticeValue](raw)
	if n == nil {
		return
	}
	tracef("notice kind=%d pid=%d pc=%#x end=%#x off=%#x file=%d/%d", n.Kind, n.Pid, n.Pc, n.End, n.Off, n.File.Dev, n.File.Ino)
	if n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_FULL) {
		select {
		case l.drainNow <- struct{}{}: // nil without KeepStacks: never ready
		default: // a drain is due already
		}
		return
	}
	if l.Only != 0 && int(n.Pid) != l.Only {
		return
	}
	l.mu.Lock()
	tree := l.tree
	l.mu.Unlock()
	if tree != 0 && n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_EXEC) && !descends(int(n.Pid), tree) {
		return
	}
	l.mu.Lock()
	l.stats.Notices++
	l.mu.Unlock()
	if n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_EXIT) {
		l.Drop(int(n.Pid))
		l.pyNames.Gone(int(n.Pid))
		return
	}
	if n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_MAP) {
		l.foundMapping(n)
		return
	}
	if n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_EXEC) {
		// Counted here, in the ring's order: a Load that began before
		// (a held command's pre-exec image, read for a PID notice on
		// the other goroutine) must not replace the new image's.
		l.mu.Lock()
		if l.execGen == nil {
			l.execGen = map[uint32]uint32{}
		}
		l.execGen[n.Pid]++
		delete(l.found, n.Pid) // the old image's
		l.mu.Unlock()
		l.pyNames.Execed(int(n.Pid))
	}
	q := l.pending
	if n.Kind == uint32(walkerUnwindNoticeKindUNWIND_NOTICE_EXEC) {
		q = l.execs
	}
	select {
	case q <- n.Pid:
	default: // the walker asks again after its rate limit
	}
}

// work loads the processes q names until it is closed.
func (l *Loader) work(q <-chan uint32) {
	defer func() { l.done <- struct{}{} }()
	for pid := range q {
		if l.settled.Load() {
			continue
		}
		if err := l.Load(int(pid)); err != nil {
			l.loadError(err)
		}
	}
}

// Load reads /proc/PID/maps and gives the walker a table for every
// executable file mapping of the process (building the files' tables on
// first use), replacing what it had. A process that is gone is not an
// error.
func (l *Loader) Load(pid int) error {
	t0 := time.Now()
	l.mu.Lock()
	exits, execs := l.exits[uint32(pid)], l.execGen[uint32(pid)]
	l.mu.Unlock()
	ms, err := procfs.ReadMaps(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil // gone already
		}
		return fmt.Errorf("reading the mappings of process %d: %w", pid, err)
	}
	if !hasAddressSpace(ms) {
		// Exiting (its memory released, the exit notice read or on its
		// way) or between two images of an exec (the exec notice
		// follows): an empty entry written now would replace the
		// mappings its stacks are named by (Exited).
		tracef("load pid=%d execs=%d skipped: no address space", pid, execs)
		return nil
	}
	if l.onMaps != nil {
		// Before the checks below: a process that exits or execs
		// while it is loaded was sampled in this image all the same.
		l.onMaps(pid, ms)
	}
	var val procValue
	p := &proc{}
	for _, m := range ms {
		if !m.Exec() {
			continue
		}
		if int(val.Count) == maxMappings {
			l.mu.Lock()
			l.stats.Mappings++
			l.mu.Unlock()
			break
		}
		e := &val.M[val.Count]
		e.Start, e.End = m.Start, m.End
		mp := mapping{start: m.Start, end: m.End, offset: m.Offset, path: m.Path}
		if strings.HasPrefix(m.Path, "/") || m.Path == "[vdso]" {
			if sp, bias, key, ok := l.table(pid, m); ok {
				e.RowFirst, e.RowCount, e.Bias = sp.first, sp.count, bias
				p.keys = append(p.keys, key)
				mp.table = true
			}
		}
		p.maps = append(p.maps, mp)
		tracef("load pid=%d execs=%d map %#x-%#x off=%#x %s rows=%d+%d bias=%#x", pid, execs, e.Start, e.End, m.Offset, m.Path, e.RowFirst, e.RowCount, e.Bias)
		val.Count++
	}
	// /proc/PID/maps is sorted by address already; the walker relies on it.
	sort.Slice(val.M[:val.Count], func(i, j int) bool { return val.M[i].Start < val.M[j].Start })
	if err := l.writeRules(); err != nil {
		l.release(p.keys)
		return err
	}
	key := uint32(pid)
	if l.execed(key, execs) {
		tracef("load pid=%d execs=%d skipped: exec'd", pid, execs)
		l.release(p.keys)
		return nil // the new image's Load, queued behind the exec, replaces it
	}
	if err := l.m.Procs.Put(key, &val); err != nil {
		l.release(p.keys)
		return fmt.Errorf("loading the mappings of process %d: %w", pid, err)
	}
	l.python(pid, ms)
	// The process may have exited while it was read: the kernel's exit
	// hook found no entry to delete then, and sent no notice (a zombie or
	// a missing process is gone), or the notice came (exits counted it).
	alive := procfs.CheckPid(pid) == nil
	l.mu.Lock()
	if l.execGen[key] != execs {
		// The process exec'd while this was written: read it again, over
		// whatever the new image's Load wrote meanwhile.
		l.mu.Unlock()
		l.release(p.keys)
		return l.Load(pid)
	}
	if !alive || l.exits[key] != exits {
		// Its entry must not outlive it, nor hold its tables.
		l.mu.Unlock()
		l.m.Procs.Delete(key)
		l.release(p.keys)
		return nil
	}
	tracef("load pid=%d execs=%d put %d mappings alive=%v", pid, execs, val.Count, alive)
	old := l.procs[key]
	l.procs[key] = p
	if old == nil {
		l.stats.Processes++
	} else {
		l.stats.Reloads++
	}
	l.stats.LoadTime += time.Since(t0)
	l.mu.Unlock()
	if old != nil {
		l.release(old.keys)
	}
	return nil
}

// hasAddressSpace says whether ms, a process's mappings, are those of an
// address space: a process whose memory is gone still shows the vsyscall
// page, which every process has.
func hasAddressSpace(ms []procfs.Mapping) bool {
	for _, m := range ms {
		if m.Path != "[vsyscall]" {
			return true
		}
	}
	return false
}

// foundMapping keeps a mapping the walker found in the kernel, named by
// its file's path: a process that ends before its /proc entry is read
// (a command that lives a millisecond) still has its frames named.
func (l *Loader) foundMapping(n *noticeValue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name, ok := l.names[fileKey{Ino: n.File.Ino, Dev: n.File.Dev}]
	if n.File.Ino == 0 {
		name, ok = "[vdso]", true // the one mapping the walker tells without a file
	}
	if !ok {
		return
	}
	if l.found == nil {
		l.found = map[uint32][]mapping{}
	}
	ms := l.found[n.Pid]
	for _, m := range ms {
		if m.start == n.Pc {
			return
		}
	}
	if len(ms) < maxMappings {
		l.found[n.Pid] = append(ms, mapping{start: n.Pc, end: n.End, offset: n.Off, path: name})
	}
}

// execed says whether pid exec'd since a Load that saw n execs began.
func (l *Loader) execed(pid, n uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.execGen[pid] != n
}

// descends says whether pid is root or one of its descendants, by the
// parents /proc/PID/stat names.
func descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		pid = parentOf(b)
	}
	return false
}

// parentOf reads the parent's pid from a /proc/PID/stat line (0 when it
// cannot): the fourth field, after the command name in parentheses, which
// may itself hold spaces and parentheses.
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// Drop forgets a process that exited (its mappings stay known, for naming
// the files of its stacks) and releases its tables.
func (l *Loader) Drop(pid int) {
	l.mu.Lock()
	if l.exits == nil {
		l.exits = map[uint32]uint32{}
	}
	l.exits[uint32(pid)]++
	p := l.procs[uint32(pid)]
	var keys []unwindtable.Key
	if p != nil && !p.gone {
		p.gone = true
		keys, p.keys = p.keys, nil
	}
	l.mu.Unlock()
	l.release(keys)
}

// table returns the rows of the file behind mapping m of pid, loading them
// on first use, and the bias that turns the mapping's addresses into row pcs.
func (l *Loader) table(pid int, m procfs.Mapping) (span, uint64, unwindtable.Key, bool) {
	var t *unwindtable.Table
	var key unwindtable.Key
	var err error
	path := ""
	if m.Path == "[vdso]" {
		t, key, err = l.vdso(pid, m)
	} else {
		path = fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
		t, key, err = l.cache.Get(path)
	}
	if err != nil && m.Path != "[vdso]" && !errors.Is(err, unwindtable.ErrNoUnwindInfo) {
		// map_files needs CAP_SYS_ADMIN; the path through the process's
		// root works for files that still exist.
		path = fmt.Sprintf("/proc/%d/root%s", pid, m.Path)
		t, key, err = l.cache.Get(path)
	}
	if err != nil {
		tracef("table pid=%d %s: %v", pid, m.Path, err)
		if errors.Is(err, unwindtable.ErrNoUnwindInfo) {
			l.mu.Lock()
			l.stats.NoInfo++
			l.mu.Unlock()
		}
		return span{}, 0, key, false
	}
	bias, ok := mappingBias(t, m)
	if !ok {
		tracef("table pid=%d %s: no bias for the mapping at offset %#x", pid, m.Path, m.Offset)
		return span{}, 0, key, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idle.take(key)
	lt := l.tables[key]
	if lt == nil {
		if lt = l.loadTable(t, key); lt == nil {
			return span{}, 0, key, false
		}
	}
	lt.refs++
	l.addFile(lt, path, m.Path, t)
	return lt.span, bias, key, true
}

// loadTable writes a table's rows (l.mu held); nil when they do not fit
// or cannot be written (counted). The caller takes the first reference.
func (l *Loader) loadTable(t *unwindtable.Table, key unwindtable.Key) *loaded {
	sp, err := l.writeRows(t)
	if err == nil {
		// Before any mapping or file entry points at the rows.
		err = l.writeRulesLocked()
	}
	if err != nil {
		l.stats.LoadErrors++
		l.stats.LastLoadErr = err.Error()
		return nil
	}
	if sp.count == 0 {
		l.stats.RowsFull++
		return nil
	}
	lt := &loaded{span: sp, bytes: t.Bytes()}
	l.tables[key] = lt
	l.stats.Files++
	l.stats.Rows += sp.count
	l.stats.RowBytes += uint64(sp.count) * 8
	return lt
}

// addFile gives the walker the file at path (l.mu held) by its identity in
// the kernel, so a mapping of it that no process entry names yet still
// unwinds (unwind_files). Files seen under several names are added once
// per inode.
func (l *Loader) addFile(lt *loaded, path, name string, t *unwindtable.Table) {
	if l.files.Files == nil || path == "" || len(t.Exec) == 0 {
		return
	}
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return
	}
	k := fileKey{Ino: st.Ino, Dev: uint32(unix.Major(st.Dev))<<20 | uint32(unix.Minor(st.Dev))}
	if l.names == nil {
		l.names = map[fileKey]string{}
	}
	l.names[k] = name
	for _, f := range lt.files {
		if f == k {
			return
		}
	}
	s := t.Exec[0]
	v := fileValue{Off: s.Off, Size: s.Size, Delta: s.Vaddr - s.Off - t.Base, RowFirst: lt.first, RowCount: lt.count}
	tracef("file %s key=%d/%d off=%#x size=%#x delta=%#x rows=%d+%d", path, k.Dev, k.Ino, v.Off, v.Size, v.Delta, v.RowFirst, v.RowCount)
	if l.files.Files.Put(&k, &v) == nil {
		lt.files = append(lt.files, k)
		if l.owner == nil {
			l.owner = map[fileKey]*loaded{}
		}
		l.owner[k] = lt
	}
}

// writeRows puts a table's rows into the rows map (l.mu held); a zero span
// when they do not fit.
func (l *Loader) writeRows(t *unwindtable.Table) (span, error) {
	pcs, rules, err := t.Compact(&l.rules)
	if err != nil {
		return span{}, fmt.Errorf("compacting an unwind table: %w", err)
	}
	n := uint32(len(pcs))
	sp, ok := l.alloc(n)
	if !ok {
		return span{}, nil
	}
	keys := make([]uint32, n)
	vals := make([]rowValue, n)
	for i := range pcs {
		keys[i] = sp.first + uint32(i)
		vals[i] = rowValue{Pc: pcs[i], Rule: rules[i]}
	}
	if _, err := l.m.Rows.BatchUpdate(keys, vals, nil); err != nil {
		if !errors.Is(err, ebpf.ErrNotSupported) {
			return span{}, fmt.Errorf("loading unwind rows: %w", err)
		}
		for i := range keys {
			if err := l.m.Rows.Put(keys[i], &vals[i]); err != nil {
				return span{}, fmt.Errorf("loading unwind rows: %w", err)
			}
		}
	}
	return sp, nil
}

// alloc finds n free rows: a released run first, else the end. A run
// never starts where a table of the same length started before: the
// walker's per-CPU row cache (struct unwind_row_entry) keys answers by
// table start and length, so a new table there could meet an old answer.
func (l *Loader) alloc(n uint32) (span, bool) {
	if l.used == nil {
		l.used = map[span]bool{}
	}
	for i, f := range l.free {
		if f.count >= n && !l.used[span{f.first, n}] {
			l.free[i] = span{f.first + n, f.count - n}
			l.used[span{f.first, n}] = true
			return span{f.first, n}, true
		}
	}
	if l.cap-l.next < n {
		// Idle tables (release) give their rows back, oldest first.
		if k, ok := l.idle.oldest(); ok {
			l.evict(k)
			return l.alloc(n)
		}
		return span{}, false
	}
	sp := span{l.next, n}
	l.next += n
	l.used[sp] = true
	return sp, true
}

// release drops a reference to each table. A table no process maps
// stays loaded, rows and file entry, while it fits the idle budget
// (IdleTableBytes): the next process of the same program (a shell
// script's children, a build's compiler jobs) is walked with it through
// the kernel's mappings (unwind_files) from its first sample, before user
// space has read its notice. Tables pushed out of the budget give their
// rows back, as do idle tables when a new one needs rows (alloc).
func (l *Loader) release(keys []unwindtable.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		lt := l.tables[k]
		if lt == nil || lt.refs == 0 {
			continue
		}
		if lt.refs--; lt.refs == 0 {
			for _, old := range l.idle.add(k, lt.bytes) {
				l.evict(old)
			}
		}
	}
}

// evict unloads an idle table (l.mu held): its file entries go, its rows
// are given back, its built form is forgotten.
func (l *Loader) evict(k unwindtable.Key) {
	l.cache.Forget(k)
	lt := l.tables[k]
	if lt == nil || lt.refs > 0 {
		return
	}
	tracef("evict table rows=%d+%d files=%v", lt.first, lt.count, lt.files)
	for _, f := range lt.files {
		if l.owner[f] != lt {
			continue // the inode is another file's now, and so is the entry
		}
		delete(l.owner, f)
		if l.files.Files != nil {
			l.files.Files.Delete(&f)
		}
	}
	delete(l.tables, k)
	l.free = append(l.free, lt.span)
	l.stats.Files--
	l.stats.Rows -= lt.count
	l.stats.RowBytes -= uint64(lt.count) * 8
}

// writeRules writes the rules added to the dictionary since last time.
func (l *Loader) writeRules() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeRulesLocked()
}

func (l *Loader) writeRulesLocked() error {
	for i := l.rulesWritten; i < l.rules.Len(); i++ {
		r := l.rules.Rule(uint16(i))
		v := ruleValue{Cfa: r.CFA, Fp: r.FP, Ra: r.RA, Kind: uint8(r.Kind), Flags: r.Flags}
		if err := l.m.Rules.Put(uint32(i), &v); err != nil {
			return fmt.Errorf("loading unwind rules: %w", err)
		}
		l.rulesWritten = i + 1
	}
	return nil
}

// Stats returns the loader's counters.
func (l *Loader) Stats() Stats {
	cs := l.cache.Stats()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.TablesBuilt, s.TablesCached = cs.Builds, cs.FromDisk
	return s
}

// Exited returns the executable mappings of a process that exited while
// traced, as the loader last read them (false for processes still running
// or never loaded): a tool's symbolizer can no longer read them from /proc.
func (l *Loader) Exited(pid uint32) ([]procfs.Mapping, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.procs[pid]
	// A process may end before its exit notice is read (a command's run
	// ends with it): without its /proc entry it is gone all the same.
	if (p == nil && len(l.found[pid]) == 0) || (p != nil && !p.gone && mapped(pid)) || (p == nil && mapped(pid)) {
		return nil, false
	}
	var out []procfs.Mapping
	if p != nil {
		for _, m := range p.maps {
			out = append(out, procfs.Mapping{Start: m.start, End: m.end, Offset: m.offset, Perms: "r-xp", Path: m.path})
		}
	}
	// What the walker found fills what /proc was not read in time for.
	for _, m := range l.found[pid] {
		if !slices.ContainsFunc(out, func(o procfs.Mapping) bool { return o.Start < m.end && m.start < o.End }) {
			out = append(out, procfs.Mapping{Start: m.start, End: m.end, Offset: m.offset, Perms: "r-xp", Path: m.path})
		}
	}
	return out, true
}

// mapped says whether process pid still has mappings to read: it is
// alive, and not a zombie.
func mapped(pid uint32) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n > 0
}

// ForgetExited drops what the loader kept of processes that exited (their
// mappings, for naming the files of their stacks): call it once their
// stacks are read, so a long run does not keep every process it met.
func (l *Loader) ForgetExited() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pid, p := range l.procs {
		if p.gone {
			delete(l.procs, pid)
			delete(l.exits, pid)
			delete(l.execGen, pid)
			delete(l.found, pid)
		}
	}
	for pid := range l.found {
		if l.procs[pid] == nil && !mapped(pid) {
			delete(l.found, pid)
		}
	}
}

// RestoreExited hands b the mappings of pid when it exited while traced,
// so its stacks can still be symbolized (a builder reads a live process's
// mappings from /proc itself). Call it before b first sees pid.
func (l *Loader) RestoreExited(b interface{ Mmap(perf.Mmap) }, pid uint32) {
	ms, ok := l.Exited(pid)
	if !ok {
		return
	}
	for _, m := range ms {
		b.Mmap(perf.Mmap{Pid: pid, Tid: pid, Addr: m.Start, Len: m.End - m.Start, Pgoff: m.Offset, Prot: 0x4, Filename: m.Path})
	}
}

// Restorer is RestoreExited once per process: call it with each pid
// before b first sees it. A nil l (no walker) restores nothing.
func (l *Loader) Restorer(b interface{ Mmap(perf.Mmap) }) func(pid uint32) {
	seen := map[uint32]bool{}
	return func(pid uint32) {
		if l != nil && !seen[pid] {
			seen[pid] = true
			l.RestoreExited(b, pid)
		}
	}
}

// FileOf names the file mapped at pc in process pid ("" if unknown).
func (l *Loader) FileOf(pid uint32, pc uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.procs[pid]
	if p == nil {
		return ""
	}
	for _, m := range p.maps {
		if pc >= m.start && pc < m.end {
			if m.path == "" {
				return "[anon]"
			}
			return m.path
		}
	}
	return ""
}

// vdso builds the table of the vDSO, which exists only in memory: from the
// process's own copy, once per kernel image (keyed by its build-id).
func (l *Loader) vdso(pid int, m procfs.Mapping) (*unwindtable.Table, unwindtable.Key, error) {
	if m.End-m.Start > 1<<20 {
		return nil, unwindtable.Key{}, fmt.Errorf("a %d-byte vDSO", m.End-m.Start)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, unwindtable.Key{}, fmt.Errorf("reading the vDSO: %w", err)
	}
	defer f.Close()
	b := make([]byte, m.End-m.Start)
	if _, err := f.ReadAt(b, int64(m.Start)); err != nil {
		return nil, unwindtable.Key{}, fmt.Errorf("reading the vDSO: %w", err)
	}
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, unwindtable.Key{}, fmt.Errorf("reading the vDSO: %w", err)
	}
	key := unwindtable.Key{BuildID: unwindtable.BuildID(ef)}
	if key.BuildID == "" {
		key.BuildID = fmt.Sprintf("vdso-%x", sha256.Sum256(b))
	}
	l.mu.Lock()
	t := l.vdsos[key]
	l.mu.Unlock()
	if t != nil {
		return t, key, nil
	}
	if t, err = unwindtable.BuildELF(ef); err != nil {
		return nil, key, fmt.Errorf("building the vDSO's unwind table: %w", err)
	}
	l.mu.Lock()
	l.vdsos[key] = t
	l.mu.Unlock()
	return t, key, nil
}

// mappingBias is what the walker subtracts from a pc in mapping m to get
// a row pc of table t; false when m maps none of t's executable segments.
func mappingBias(t *unwindtable.Table, m procfs.Mapping) (uint64, bool) {
	for _, s := range t.Exec {
		if m.Offset < s.Off+s.Size && m.Offset+(m.End-m.Start) > s.Off {
			// The mapping's first byte is at file offset m.Offset, which
			// the segment places at virtual address Vaddr - Off + m.Offset.
			return m.Start - (s.Vaddr - s.Off + m.Offset) + t.Base, true
		}
	}
	return 0, false
}
