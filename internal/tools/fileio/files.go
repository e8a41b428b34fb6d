// Package files traces reads and writes of files from the syscall
// tracepoints, with no kprobe: per process and file, calls and bytes
// (filetop), or each call slower than a threshold (fileslower). The fd of
// each call is resolved in the kernel through the task's file table
// (CO-RE), so every filesystem, pipe and socket is seen the same way; a
// file's path is walked in the kernel once and sent on a ring buffer, so
// files of processes that have exited are still named.
package fileio

import (
	"fmt"
	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"runtime"
	"strings"
	"sync"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
)

// Mode is how the calls are traced: there is one, the syscall
// tracepoints; a VFS-level mode would need kprobes.
const Mode = "syscall tracepoints"

// syscallKinds are the traced syscalls and where their fds are. The
// programs see every syscall (the raw sys_enter and sys_exit tracepoints)
// and keep these by number.
var syscallKinds = []struct {
	name string
	kind filesFilesIo
}{
	{"read", filesFilesIoFILES_IO_READ}, {"pread64", filesFilesIoFILES_IO_READ}, {"readv", filesFilesIoFILES_IO_READ},
	{"preadv", filesFilesIoFILES_IO_READ}, {"preadv2", filesFilesIoFILES_IO_READ},
	{"write", filesFilesIoFILES_IO_WRITE}, {"pwrite64", filesFilesIoFILES_IO_WRITE}, {"writev", filesFilesIoFILES_IO_WRITE},
	{"pwritev", filesFilesIoFILES_IO_WRITE}, {"pwritev2", filesFilesIoFILES_IO_WRITE},
	{"sendfile", filesFilesIoFILES_IO_SENDFILE},
	{"splice", filesFilesIoFILES_IO_SPLICE}, {"copy_file_range", filesFilesIoFILES_IO_SPLICE},
}

// ioKinds is the programs' io_kind: each traced syscall's kind by its
// number on arch (a syscall the architecture lacks is left out).
func ioKinds(arch string) [filesNrMax]uint8 {
	var k [filesNrMax]uint8
	for _, s := range syscallKinds {
		if nr := syscalls.Number(arch, s.name); nr >= 0 && nr < filesNrMax {
			k[nr] = uint8(s.kind)
		}
	}
	return k
}

// filesNrMax is FILES_NR_MAX in files.h: io_kind's length.
const filesNrMax = 512

// hooks are the raw sys_enter and sys_exit tracepoints, exit before
// entry, so no entry waits for an exit that is never seen. A
// syscalls:sys_enter_NAME/sys_exit_NAME pair per syscall made 26 perf
// events on amd64, which the kernel took 0.85 s to remove at exit (a
// grace period each); a raw tracepoint's link goes at once.
func hooks() []bpfskel.Hook {
	return []bpfskel.Hook{
		bpfskel.BTFTracepoint("sys_exit", filesProgTpBtfExitIo, filesProgRawExitIo),
		bpfskel.BTFTracepoint("sys_enter", filesProgTpBtfSysEnter, filesProgRawSysEnter),
	}
}

// session opens the object with the options both tools share.
func session(maps *filesMaps, pid int, cg *cgroup.Target, command []string, consts map[string]any) (*bpfskel.Session, error) {
	hs := hooks()
	consts[filesVarTargetPid] = uint32(pid)
	consts[filesVarIoKind] = ioKinds(runtime.GOARCH)
	if len(command) > 0 {
		consts[filesVarFollowChildren] = true
		hs = append([]bpfskel.Hook{
			bpfskel.BTFTracepoint("sched_process_fork", filesProgTpBtfFork, filesProgRawFork),
			bpfskel.BTFTracepoint("sched_process_exit", filesProgTpBtfExit, filesProgRawExit),
		}, hs...)
	}
	return bpfskel.Open(bpfskel.Tool{
		Name: "file I/O tracer", Spec: loadFiles, Maps: maps, Consts: consts,
		Command: command, PidConst: filesVarTargetPid, Hooks: hs, Cgroup: cg,
	})
}

// Lost counts what the programs could not record (each tag names its
// member of enum files_counter, bpfskel.Counters).
type Lost struct {
	InFlight uint64 `counter:"FILES_LOST_INFLIGHT"` // calls not timed: the in-flight map was full
	Stats    uint64 `counter:"FILES_LOST_STATS"`    // calls not counted: the per-file map was full
	Ring     uint64 `counter:"FILES_LOST_RING"`     // paths or slow calls dropped: the ring buffer was full
}

// Total is every loss.
func (l Lost) Total() uint64 { return l.InFlight + l.Stats + l.Ring }

func (l Lost) String() string {
	return fmt.Sprintf("lost %d (%d in-flight map full, %d file map full, %d ring full)", l.Total(), l.InFlight, l.Stats, l.Ring)
}

func readLost(m *filesMaps) (Lost, error) {
	var l Lost
	return l, m.Counters.Read(&l)
}

// File types, from the inode's mode.
const (
	Regular = "regular"
	Pipe    = "pipe" // anonymous pipes and named FIFOs
	Socket  = "socket"
	Other   = "other" // devices, directories, anonymous inodes
)

// Kind is the file type of an inode mode.
func Kind(mode uint32) string {
	switch mode & 0o170000 {
	case 0o100000:
		return Regular
	case 0o010000:
		return Pipe
	case 0o140000:
		return Socket
	}
	return Other
}

// fileID is a file: the superblock's device and the inode.
type fileID struct {
	dev uint32
	ino uint64
}

// Dev spells a kernel dev_t (major<<20 | minor) as major:minor.
func Dev(dev uint32) string { return fmt.Sprintf("%d:%d", dev>>20, dev&(1<<20-1)) }

// Filesystem magics whose files have no path (linux/magic.h).
const (
	pipefsMagic    = 0x50495045
	sockfsMagic    = 0x534F434B
	anonInodeMagic = 0x09041934
)

// pathOf assembles a path record's names (the file's first, then its
// parents) into a path, as /proc/PID/fd links spell them.
func pathOf(p *filesFilesPath) string {
	n := min(int(p.Depth), len(p.Names))
	switch p.Magic {
	case pipefsMagic:
		return fmt.Sprintf("pipe:[%d]", p.Ino)
	case sockfsMagic:
		return fmt.Sprintf("socket:[%d]", p.Ino)
	case anonInodeMagic:
		if n > 0 {
			return "anon_inode:" + bpfmaps.CString(p.Names[0][:])
		}
		return "anon_inode"
	}
	var b strings.Builder
	if p.Truncated != 0 {
		b.WriteString("…")
	}
	for i := n - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(bpfmaps.CString(p.Names[i][:]))
	}
	if n == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// paths holds the paths the kernel sent, written by the ring reader and
// read by the report.
type paths struct {
	mu sync.Mutex
	m  map[fileID]string
}

func (ps *paths) add(p *filesFilesPath) {
	ps.mu.Lock()
	ps.m[fileID{p.Dev, p.Ino}] = pathOf(p)
	ps.mu.Unlock()
}

// name is a file's path, or its device and inode when the path never
// arrived (lost to a full ring).
func (ps *paths) name(dev uint32, ino uint64) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s, ok := ps.m[fileID{dev, ino}]; ok {
		return s
	}
	return fmt.Sprintf("[dev %s ino %d]", Dev(dev), ino)
}

// readEvents reads the ring until s's run ends: paths into ps, slow calls
// to slow (nil: none are sent).
func readEvents(s *bpfskel.Session, m *filesMaps, ps *paths, slow func(*filesFilesSlow)) error {
	return s.ReadRing(m.Events, func(raw []byte) {
		if bpfskel.View[uint32](raw) == nil {
			return
		}
		switch filesFilesRecType(*bpfskel.View[uint32](raw)) {
		case filesFilesRecTypeFILES_REC_PATH:
			if p := bpfskel.View[filesFilesPath](raw); p != nil {
				ps.add(p)
			}
		case filesFilesRecTypeFILES_REC_SLOW:
			if e := bpfskel.View[filesFilesSlow](raw); e != nil && slow != nil {
				slow(e)
			}
		}
	})
}
