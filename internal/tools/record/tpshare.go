package record

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tracepointPrograms lists the ids of the BPF programs attached to the
// tracepoint behind perf event fd (PERF_EVENT_IOC_QUERY_BPF): the kernel
// keeps one list per tracepoint, runs all of them at every hit and drops
// the hit for every perf event when any returns 0, so a program someone
// else attached (bpftrace's, which return 0) silences record's events.
func tracepointPrograms(fd int) ([]uint32, error) {
	var q struct {
		idsLen, progCnt uint32
		ids             [64]uint32
	}
	q.idsLen = uint32(len(q.ids))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_QUERY_BPF, uintptr(unsafe.Pointer(&q)))
	if errno != 0 {
		return nil, fmt.Errorf("querying the tracepoint's BPF programs: %w", errno)
	}
	return q.ids[:min(q.progCnt, q.idsLen)], nil
}

// foreignPrograms says, for a tracepoint event, which attached programs
// are not record's own (mine: the walker's program id, 0 without it).
func foreignPrograms(fd int, mine uint32) []uint32 {
	ids, err := tracepointPrograms(fd)
	if err != nil {
		return nil
	}
	var out []uint32
	for _, id := range ids {
		if id != mine {
			out = append(out, id)
		}
	}
	return out
}
