package fileio

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
	"github.com/sonde-dev/sonde/internal/collect/syscalls"
)

// pathRec builds a path record the way the kernel fills it: the file's
// name first, then its parents.
func pathRec(magic uint64, ino uint64, truncated bool, names ...string) *filesFilesPath {
	p := &filesFilesPath{Magic: magic, Ino: ino, Depth: uint32(len(names))}
	if truncated {
		p.Truncated = 1
	}
	for i, n := range names {
		for j := 0; j < len(n); j++ {
			p.Names[i][j] = int8(n[j])
		}
	}
	return p
}

func TestPathOf(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  *filesFilesPath
		want string
	}{
		{"regular_file", pathRec(0xef53, 12, false, "out.bin", "tmp"), "/tmp/out.bin"},
		{"root_directory", pathRec(0xef53, 2, false), "/"},
		{"deeper_than_the_walk", pathRec(0xef53, 12, true, "c", "b"), "…/b/c"},
		{"anonymous_pipe", pathRec(pipefsMagic, 4242, false), "pipe:[4242]"},
		{"socket", pathRec(sockfsMagic, 77, false), "socket:[77]"},
		{"eventfd", pathRec(anonInodeMagic, 9, false, "[eventfd]"), "anon_inode:[eventfd]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pathOf(c.rec); got != c.want {
				t.Errorf("pathOf = %q, want %q", got, c.want)
			}
		})
	}
	// A name filling its slot is cut, not run into the next one.
	long := strings.Repeat("n", 63)
	if got := pathOf(pathRec(0xef53, 1, false, long, "d")); got != "/d/"+long {
		t.Errorf("63-byte name: %q", got)
	}
}

func TestKindAndDev(t *testing.T) {
	for mode, want := range map[uint32]string{0o100644: Regular, 0o010600: Pipe, 0o140777: Socket, 0o020666: Other, 0o040755: Other} {
		if got := Kind(mode); got != want {
			t.Errorf("Kind(%o) = %s, want %s", mode, got, want)
		}
	}
	if got := Dev(8<<20 | 3); got != "8:3" {
		t.Errorf("Dev = %s", got)
	}
}

func TestPathsFallback(t *testing.T) {
	ps := &paths{m: map[fileID]string{}}
	p := pathRec(0xef53, 12, false, "f", "tmp")
	p.Dev = 8<<20 | 1
	ps.add(p)
	if got := ps.name(8<<20|1, 12); got != "/tmp/f" {
		t.Errorf("known path: %q", got)
	}
	// A path lost to a full ring still names the file uniquely.
	if got := ps.name(8<<20|1, 13); got != "[dev 8:1 ino 13]" {
		t.Errorf("unknown path: %q", got)
	}
}

func TestSortFiles(t *testing.T) {
	fs := []File{
		{Pid: 1, Path: "/a", Reads: 10, ReadBytes: 100},
		{Pid: 2, Path: "/b", Writes: 1, WriteBytes: 1000},
		{Pid: 3, Path: "/c", Reads: 5, ReadBytes: 500, Writes: 5, WriteBytes: 10},
	}
	for by, want := range map[string]string{"all": "/b /c /a", "reads": "/a /c /b", "writes": "/c /b /a", "rbytes": "/c /a /b", "wbytes": "/b /c /a"} {
		SortFiles(fs, by)
		var got []string
		for _, f := range fs {
			got = append(got, f.Path)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("sort %s: %v, want %s", by, got, want)
		}
	}
}

func TestTopText(t *testing.T) {
	r := &TopReport{Files: []File{
		{Pid: 7, Tid: 8, Comm: "dd", Path: "/tmp/out", Kind: Regular, Writes: 160, WriteBytes: 10 << 20},
		{Pid: 7, Tid: 8, Comm: "dd", Path: "pipe:[3]", Kind: Pipe, Reads: 1, ReadBytes: 512},
	}, o: TopOptions{Rows: 1}, at: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	var b bytes.Buffer
	r.WriteText(&b)
	out := b.String()
	for _, want := range []string{"12:00:00", "R_KiB", "160", "10240.0 R /tmp/out", "# 1 more files"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pipe:[3]") || strings.Contains(out, "\033[") {
		t.Errorf("row past -r, or a clear without Clear:\n%s", out)
	}
}

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadFiles, filesMapCounters, &Lost{}); err != nil {
		t.Fatal(err)
	}
}

// Every traced syscall has a number on each architecture, below
// FILES_NR_MAX, and io_kind in the object is as long as the Go array set
// into it (no root: the object's BTF).
func TestIoKinds(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		k := ioKinds(arch)
		n := 0
		for _, v := range k {
			if v != 0 {
				n++
			}
		}
		if n != len(syscallKinds) {
			t.Errorf("%s: %d of %d syscalls have a number", arch, n, len(syscallKinds))
		}
		if k[syscalls.Number(arch, "write")] != uint8(filesFilesIoFILES_IO_WRITE) {
			t.Errorf("%s: write is not a write", arch)
		}
	}
	spec, err := loadFiles()
	if err != nil {
		t.Fatal(err)
	}
	v := spec.Variables[filesVarIoKind]
	if v == nil || v.Size() != filesNrMax {
		t.Fatalf("io_kind in the object: %v, want %d bytes", v, filesNrMax)
	}
}
