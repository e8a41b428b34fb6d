package why

import (
	"bufio"
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

func readCPUStat(dir string) (cpuStat, bool) {
	f, err := os.Open(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return cpuStat{}, false
	}
	defer f.Close()
	return parseCPUStat(f), true
}
