package probe

import (
	"fmt"
	"os"
	"strings"
)

// ExecOf is the executable of a running process, as a path this process
// can open: through /proc/PID/root when the process is in another mount
// namespace, else the path it was started from.
func ExecOf(pid int) (string, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", fmt.Errorf("no such process: %d", pid)
	}
	if viaRoot := fmt.Sprintf("/proc/%d/root%s", pid, exe); fileExists(viaRoot) {
		return viaRoot, nil
	}
	return exe, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// DelOwn removes every probe in the groups sonde and perf probe create
// (probe, probe_*, sonde_*) and returns how many it removed.
func DelOwn() (int, error) {
	ps, err := List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if strings.HasPrefix(p.Group, "probe_") || strings.HasPrefix(p.Group, "sonde_") || p.Group == "probe" {
			if err := Del(p.Name()); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
