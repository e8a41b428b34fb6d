package opensnoop_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/opensnoop"
)

// call is one open as strace printed it.
type call struct {
	syscall, path string
	ret           int32
	errno         string
}

// straceLine is `openat(AT_FDCWD, "/x", O_RDONLY) = 3` or `… = -1 ENOENT (…)`.
var straceLine = regexp.MustCompile(`^(open|openat|openat2)\((?:AT_FDCWD, )?"([^"]*)".* = (-?\d+)(?: (E[A-Z0-9]+))?`)

// TestOpensnoopAgainstStrace: every open, openat and openat2 a test
// program makes (the dynamic loader's too) is seen, in order, with the
// path, the fd or errno strace saw in the same run; the flags and mode of
// the ones it made itself; the long path cut and marked. libbpf-tools'
// opensnoop counts the same opens.
func TestOpensnoopAgainstStrace(t *testing.T) {
	testutil.RequirePrivileged(t)
	straceBin := testutil.RequireTool(t, "strace", "strace")
	peerBin := testutil.RequireTool(t, "/usr/sbin/opensnoop", "libbpf-tools")
	dir := t.TempDir()
	name := fmt.Sprintf("os%d", time.Now().UnixNano()%1e9)
	bin := testutil.BuildC(t, dir, name, []string{testutil.PackageC("openwork.c")})

	peer := testutil.StartPeer(t, func(l string) bool { return strings.Contains(l, " "+name+" ") }, peerBin, "-n", name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := testutil.Collect(func(out func(opensnoop.Open)) (*opensnoop.Result, error) {
		return opensnoop.Run(ctx, opensnoop.Options{Comms: []string{name}}, out)
	})
	links := 4 // openat and openat2, entry and exit; open(2) too where the kernel has it
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls/sys_enter_open"); err == nil {
		links = 6
	}
	testutil.WaitBPFLinks(t, os.Getpid(), links, 30*time.Second)
	testutil.WaitBPFLinks(t, peer.Cmd.Process.Pid, 2, 30*time.Second)

	trace := filepath.Join(dir, "strace.out")
	if out, err := exec.Command(straceBin, "-qq", "-s", "4096", "-e", "trace=open,openat,openat2", "-o", trace, bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	end := filepath.Join(dir, "end")
	last := func(ls []string) bool { return len(ls) > 0 && strings.HasSuffix(ls[len(ls)-1], end) }
	testutil.WaitFor(t, 30*time.Second, "both tools to report the program's last open", func() bool {
		got := run.All()
		return len(got) > 0 && got[len(got)-1].Path == end && last(peer.Lines())
	})
	cancel()
	res := run.Wait(t)
	got, peerLines := run.All(), peer.Stop()
	if res.Counts.InFlight+res.Counts.Ring != 0 {
		t.Errorf("lost: %+v", res.Counts)
	}

	want := straceCalls(t, trace)
	if len(got) != len(want) {
		t.Errorf("sonde saw %d opens, strace %d", len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		path := w.path
		if len(path) > opensnoop.PathMax {
			path = path[:opensnoop.PathMax]
			if !g.Cut {
				t.Errorf("open %d: a %d-byte path not marked cut", i, len(w.path))
			}
		}
		if g.Syscall != w.syscall || g.Path != path || g.Ret != w.ret || g.Errno != w.errno {
			t.Errorf("open %d: sonde %s %q = %d %s; strace %s %q = %d %s", i, g.Syscall, g.Path, g.Ret, g.Errno, w.syscall, path, w.ret, w.errno)
		}
	}
	// The program's own opens, with their flags and modes.
	own := map[string]opensnoop.Open{}
	for _, g := range got {
		own[strings.TrimPrefix(g.Path, dir+"/")] = g
	}
	checks := map[string][2]uint64{
		"b": {uint64(os.O_WRONLY | os.O_CREATE | os.O_TRUNC), 0o640},
		"c": {uint64(os.O_RDWR | os.O_CREATE), 0o600},
	}
	if _, ok := own["a"]; ok {
		checks["a"] = [2]uint64{uint64(os.O_RDONLY | os.O_CREATE), 0o644}
	}
	for f, fm := range checks {
		g := own[f]
		if g.Flags&^0o100000 != fm[0] || uint64(g.Mode) != fm[1] { // O_LARGEFILE may be added by libc
			t.Errorf("%s: flags %o mode %o, want %o %o", f, g.Flags, g.Mode, fm[0], fm[1])
		}
	}
	if g := own["missing"]; g.Errno != "ENOENT" || g.Ret != -2 {
		t.Errorf("missing: %+v, want ENOENT", g)
	}
	// libbpf-tools' opensnoop (Debian's) reports the openat calls only:
	// this program's open(2) and openat2 are not among its lines.
	openats := 0
	for _, w := range want {
		if w.syscall == "openat" {
			openats++
		}
	}
	if len(peerLines) != openats {
		t.Errorf("libbpf-tools' opensnoop saw %d opens, strace %d openat calls:\n%s", len(peerLines), openats, strings.Join(peerLines, "\n"))
	}
	t.Logf("sonde %d opens, strace %d (%d openat), libbpf-tools %d", len(got), len(want), openats, len(peerLines))
}

func straceCalls(t *testing.T, path string) []call {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []call
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := straceLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("an strace line not understood: %q", l)
		}
		ret, _ := strconv.Atoi(m[3])
		c := call{syscall: m[1], path: m[2], ret: int32(ret), errno: m[4]}
		if ret == -1 && c.errno != "" {
			c.ret = -int32(errnoOf(t, c.errno))
		}
		out = append(out, c)
	}
	return out
}

func errnoOf(t *testing.T, name string) int {
	for e := 1; e < 200; e++ {
		if unix.ErrnoName(unix.Errno(e)) == name {
			return e
		}
	}
	t.Fatalf("unknown errno %s", name)
	return 0
}
