package why

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Cgroup is the target's CPU cgroup and its throttling while traced
// (cpu.stat: nr_throttled and throttled_time in v1, throttled_usec in v2).
type Cgroup struct {
	Path        string `json:"path"`
	NrPeriods   uint64 `json:"nr_periods"`
	NrThrottled uint64 `json:"nr_throttled"`
	ThrottledNS uint64 `json:"throttled_ns"` // summed over the cgroup's CPUs, as the kernel counts it
}

// cpuStat is one reading of cpu.stat.
type cpuStat struct{ periods, throttled, throttledNS uint64 }

// parseCPUStat reads cpu.stat of either version.
func parseCPUStat(r io.Reader) cpuStat {
	var s cpuStat
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "nr_periods":
			s.periods = v
		case "nr_throttled":
			s.throttled = v
		case "throttled_time": // v1, ns
			s.throttledNS = v
		case "throttled_usec": // v2
			s.throttledNS = v * 1000
		}
	}
	return s
}

// parseProcCgroup finds the CPU controller's path in /proc/PID/cgroup:
// the v1 line naming "cpu", else the v2 line ("0::/path").
func parseProcCgroup(r io.Reader) (path string, v2 bool) {
	sc := bufio.NewScanner(r)
	var unified string
	found := false
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			unified, found = f[2], true
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpu" {
				return f[2], false
			}
		}
	}
	if found {
		return unified, true
	}
	return "", false
}

// cgroupMount finds where the v1 cpu controller or cgroup2 is mounted, in
// /proc/self/mountinfo.
func cgroupMount(r io.Reader, v2 bool) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		pre, post := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(pre) < 5 || len(post) < 3 {
			continue
		}
		if v2 && post[0] == "cgroup2" {
			return pre[4]
		}
		if !v2 && post[0] == "cgroup" {
			for _, o := range strings.Split(post[2], ",") {
				if o == "cpu" {
					return pre[4]
				}
			}
		}
	}
	return ""
}

// cgroupDir is the directory of pid's CPU cgroup ("" when not found).
func cgroupDir(pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	path, v2 := parseProcCgroup(f)
	f.Close()
	if path == "" {
		return ""
	}
	m, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer m.Close()
	root := cgroupMount(m, v2)
	if root == "" {
		return ""
	}
	return filepath.Join(root, path)
}

func readCPUStat(dir string) (cpuStat, bool) {
	f, err := os.Open(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return cpuStat{}, false
	}
	defer f.Close()
	return parseCPUStat(f), true
}
