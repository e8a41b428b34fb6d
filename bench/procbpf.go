package main

// What the cost and start-up tables read of a tool's process: the BPF
// programs and attachments it holds (/proc/PID/fdinfo), the kernel's run
// count and run time of those programs (bpf_stats), and its CPU time.

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
)

// attachments reads a process's fds: the BPF programs it holds (by id),
// how many links and perf events it has open, and the instructions the
// verifier processed for its programs.
func attachments(pid int) (ids []uint32, attached int, verified uint64) {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir)
	seen := map[uint32]uint64{}
	for _, e := range ents {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name())); l == "anon_inode:[perf_event]" {
			attached++
			continue
		}
		b, err := os.ReadFile(dir + "/" + e.Name()) // a few short lines
		if err != nil {
			continue
		}
		var id uint32
		var v uint64
		link := false
		for _, line := range strings.Split(string(b), "\n") {
			k, val, _ := strings.Cut(line, ":")
			val = strings.TrimSpace(val)
			switch k {
			case "prog_id":
				n, _ := strconv.ParseUint(val, 10, 32)
				id = uint32(n)
			case "link_id":
				link = true
			case "verified_insns":
				v, _ = strconv.ParseUint(val, 10, 64)
			}
		}
		if link {
			attached++
		}
		if id != 0 {
			if _, ok := seen[id]; !ok {
				ids = append(ids, id)
			}
			seen[id] = max(seen[id], v)
		}
	}
	for _, v := range seen {
		verified += v
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, attached, verified
}

// progStats sums run count and run time over programs, as the kernel
// counts them (bpf_stats).
func progStats(ids []uint32) (uint64, time.Duration) {
	var runs uint64
	var rt time.Duration
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err != nil {
			continue
		}
		if st, err := p.Stats(); err == nil {
			runs += st.RunCount
			rt += st.Runtime
		}
		p.Close()
	}
	return runs, rt
}

// procCPU is a process's CPU time so far, summed over its threads from
// schedstat (nanoseconds; the tick-based utime/stime are too coarse here).
func procCPU(pid int) time.Duration {
	d, _ := procfs.ProcessOnCPU(pid)
	return d
}
