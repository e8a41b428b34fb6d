package procfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ParseSchedstat reads a schedstat file's first field: the task's time on
// CPU so far, counted by the scheduler in nanoseconds (the tick-based
// utime and stime of stat are too coarse to check exact accounting with).
func ParseSchedstat(r io.Reader) (time.Duration, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading schedstat: %w", err)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want three numbers", strings.TrimSpace(line))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("schedstat %q: bad run time", strings.TrimSpace(line))
	}
	return time.Duration(ns), nil
}

// OnCPU is a thread's time on CPU so far (/proc/PID/task/TID/schedstat);
// with tid 0, the process's main thread's (/proc/PID/schedstat).
func OnCPU(pid, tid int) (time.Duration, error) {
	path := fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid)
	if tid == 0 {
		path = fmt.Sprintf("/proc/%d/schedstat", pid)
	}
	return readSchedstat(path)
}

// ProcessOnCPU is a process's time on CPU so far, summed over the threads
// it has now.
func ProcessOnCPU(pid int) (time.Duration, error) {
	tids, err := Threads(pid)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, tid := range tids {
		if d, err := OnCPU(pid, tid); err == nil { // a thread may exit meanwhile
			sum += d
		}
	}
	return sum, nil
}

// ThreadsOnCPU is every thread's time on CPU so far, by thread id; threads
// that exit while they are read are left out.
func ThreadsOnCPU() map[int]time.Duration {
	paths, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/schedstat")
	out := make(map[int]time.Duration, len(paths))
	for _, p := range paths {
		tid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		if d, err := readSchedstat(p); err == nil {
			out[tid] = d
		}
	}
	return out
}

func readSchedstat(path string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ParseSchedstat(f)
}
