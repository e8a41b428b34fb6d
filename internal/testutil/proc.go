package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// VmRSS reads a process's resident set size in KiB from /proc/PID/status.
func VmRSS(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// PeakRSS is the peak resident set size in KiB of a command that has
// ended (its rusage, from wait4).
func PeakRSS(cmd *exec.Cmd) int {
	return int(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
}
