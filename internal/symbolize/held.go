package symbolize

import (
	"fmt"
	"os"
	"sync"
)

// Binaries of processes in another mount namespace (a container's) are
// reachable only through /proc/PID/root while the process lives. Recordings
// hold them open from when they are first mapped, so the symbolize pass at
// the end names them even after the process exited and its namespace went
// away (an open file keeps its file system).

// maxHeld bounds the files held at once (one descriptor each).
const maxHeld = 512

type heldKey struct{ path, buildID string }

var held = struct {
	sync.Mutex
	files map[heldKey]*os.File
	order []heldKey
	myNS  string
}{files: map[heldKey]*os.File{}}

// HoldForeign opens path as pid maps it when pid lives in another mount
// namespace than sonde, and keeps it for ELFFiles; it does nothing for a
// process of sonde's own namespace or one already gone.
func HoldForeign(pid uint32, path, buildID string) {
	if pid == 0 || path == "" || path[0] != '/' {
		return
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return
	}
	held.Lock()
	defer held.Unlock()
	if held.myNS == "" {
		held.myNS, _ = os.Readlink("/proc/self/ns/mnt")
	}
	k := heldKey{path, buildID}
	if ns == held.myNS || held.files[k] != nil {
		return
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/root%s", pid, path))
	if err != nil {
		return
	}
	if len(held.order) >= maxHeld {
		old := held.order[0]
		held.order = held.order[1:]
		held.files[old].Close()
		delete(held.files, old)
	}
	held.files[k] = f
	held.order = append(held.order, k)
}

// heldPath is a path that opens the file held for (path, buildID), "" when
// none is held.
func heldPath(path, buildID string) string {
	held.Lock()
	defer held.Unlock()
	if f := held.files[heldKey{path, buildID}]; f != nil {
		return fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	}
	return ""
}

// ReleaseHeld closes every held file (a recording calls it once its
// frames are named).
func ReleaseHeld() {
	held.Lock()
	defer held.Unlock()
	for _, f := range held.files {
		f.Close()
	}
	held.files, held.order = map[heldKey]*os.File{}, nil
}
