package symbolize

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Some binaries are gone by the time a recording names its frames:
//   - those of processes in another mount namespace (a container's),
//     reachable only through /proc/PID/root while the process lives;
//   - those in a temporary directory, where build and test tools (go run,
//     go test, compilers' helpers) run a program and delete it.
// Recordings hold them open from when they are first mapped, so the
// symbolize pass at the end names them even after the process exited and
// the file or its namespace went away (an open file keeps its data).

// maxHeld bounds the files held at once (one descriptor each), and
// maxHeldBytes their size: a deleted file held open keeps its disk space
// until the recording ends.
const (
	maxHeld      = 512
	maxHeldBytes = 2 << 30
)

type heldKey struct{ path, buildID string }

var held = struct {
	sync.Mutex
	files map[heldKey]*os.File
	sizes map[heldKey]int64
	order []heldKey
	bytes int64
	myNS  string
}{files: map[heldKey]*os.File{}, sizes: map[heldKey]int64{}}

// Hold opens path as pid maps it and keeps it for ELFFiles when it may be
// gone by the end (see above); it does nothing for other files or for a
// process already gone.
func Hold(pid uint32, path, buildID string) {
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
	if (ns == held.myNS && !inTempDir(path)) || held.files[k] != nil {
		return
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/root%s", pid, path))
	if err != nil {
		return
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	for len(held.order) > 0 && (len(held.order) >= maxHeld || held.bytes+size > maxHeldBytes) {
		old := held.order[0]
		held.order = held.order[1:]
		held.files[old].Close()
		held.bytes -= held.sizes[old]
		delete(held.files, old)
		delete(held.sizes, old)
	}
	held.files[k], held.sizes[k] = f, size
	held.bytes += size
	held.order = append(held.order, k)
}

// inTempDir says whether path lies in a temporary directory.
func inTempDir(path string) bool {
	for _, d := range []string{os.TempDir(), "/tmp", "/var/tmp", "/dev/shm"} {
		if d = strings.TrimSuffix(d, "/"); d != "" && strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
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
	held.files, held.sizes, held.order, held.bytes = map[heldKey]*os.File{}, map[heldKey]int64{}, nil, 0
}
