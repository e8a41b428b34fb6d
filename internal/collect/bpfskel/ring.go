package bpfskel

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Ring reads a BPF ring buffer on its own goroutine, one reused record at
// a time (no allocation per event).
type Ring struct {
	rd *ringbuf.Reader
	// f is a non-blocking duplicate of the ring's descriptor registered
	// with Go's netpoller (nil when it cannot be): the reader waits there,
	// parked, instead of in an epoll_wait system call of its own. A
	// goroutine that sits in a system call for more than 10 ms has its
	// thread taken back by the runtime's monitor (sysmon), which then
	// polls every 20 µs for a while: with a 50 ms wait that was about 400
	// wake-ups a second per process, most of a tool's CPU on an idle
	// machine (issue 25).
	f    *os.File
	raw  syscall.RawConn // f's, waited on by the reader
	stop atomic.Bool
	done chan struct{}
}

// ringPoll is how often the reader looks at a ring that has not woken it.
const ringPoll = 50 * time.Millisecond

// After ringIdleAfter looks in a row found nothing, a reader with an idle
// flag sets it (the next record written by ring_submit wakes the reader)
// and looks only every ringIdlePoll: an idle tool wakes once a second
// instead of 20 times (biolat and filetop used 45–57 ms of CPU per 10 s
// idle). A record whose writer read the flag just before it was set
// waits for that look: at most ringIdlePoll late.
const (
	ringIdleAfter = 4
	ringIdlePoll  = time.Second
)

// ReadRing starts reading m; each record's bytes go to fn, which must not
// keep them. The BPF side may write without waking the reader
// (ring_submit in sonde_maps.h): the reader also looks every ringPoll.
// idle is the object's ring_reader_idle (nil: the reader never sleeps).
func ReadRing(m *ebpf.Map, idle *ebpf.Variable, fn func([]byte)) (*Ring, error) {
	return readRing(m, fn, ringPoll, idle)
}

// ReadRingWoken is ReadRing for a ring whose records are all written with
// default flags (bpf_ringbuf_output(..., 0)): the kernel wakes the reader
// for the first record it has not read, so the reader never polls and an
// idle ring costs nothing.
func ReadRingWoken(m *ebpf.Map, fn func([]byte)) (*Ring, error) {
	return readRing(m, fn, 0, nil)
}

// readRing reads m on a goroutine, looking every poll besides the kernel's
// wake-ups (0: only on those), less often while idle is set.
func readRing(m *ebpf.Map, fn func([]byte), poll time.Duration, idle *ebpf.Variable) (*Ring, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	r := &Ring{rd: rd, done: make(chan struct{})}
	if r.f, r.raw = pollable(m.FD()); r.f != nil {
		go r.readParked(fn, poll, idle)
	} else {
		go r.readBlocking(fn)
	}
	return r, nil
}

// pollable returns fd duplicated, non-blocking and registered with the
// netpoller, or nil when the kernel or the runtime refuses any of it.
func pollable(fd int) (*os.File, syscall.RawConn) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil
	}
	f := os.NewFile(uintptr(dup), "ringbuf")
	// Deadlines are refused for a file the netpoller does not hold.
	raw, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil, nil
	}
	return f, raw
}

// readParked delivers records as they come: the kernel wakes the reader
// through the netpoller, and a deadline poll apart (none when 0) collects
// what was written without waking it; after ringIdleAfter empty looks it
// sets idle and looks every ringIdlePoll. A look costs a parked goroutine
// woken to read two positions from shared memory.
func (r *Ring) readParked(fn func([]byte), poll time.Duration, idle *ebpf.Variable) {
	defer close(r.done)
	ready := func(uintptr) bool { return r.stop.Load() || r.rd.AvailableBytes() > 0 }
	var rec ringbuf.Record
	past := time.Unix(1, 0)
	empty := 0
	for {
		// Stop is seen before the last read: records written before it
		// are all delivered.
		stopping := r.stop.Load()
		// Every record there now, without waiting (epoll_wait with a
		// zero timeout once per round).
		r.rd.SetDeadline(past)
		n := 0
		for ; r.rd.ReadInto(&rec) == nil; n++ {
			fn(rec.RawSample)
		}
		if stopping {
			return
		}
		if n > 0 {
			empty = 0
		} else {
			empty++
		}
		wait := poll
		if idle != nil && empty >= ringIdleAfter {
			// Set at every idle look: a second ring of the object may
			// have cleared it. Then one more look, for a record written
			// before its writer could see it.
			if idle.Set(uint32(1)) == nil {
				if r.rd.AvailableBytes() > 0 {
					continue
				}
				wait = ringIdlePoll
			}
		}
		if wait > 0 {
			r.f.SetReadDeadline(time.Now().Add(wait))
		}
		r.raw.Read(ready)
	}
}

// readBlocking is readParked for a ring the netpoller cannot hold: the
// reader's own epoll_wait, woken by the kernel or a deadline ringPoll
// apart.
func (r *Ring) readBlocking(fn func([]byte)) {
	defer close(r.done)
	var rec ringbuf.Record
	for {
		r.rd.SetDeadline(time.Now().Add(ringPoll))
		err := r.rd.ReadInto(&rec)
		if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) {
			return
		}
		if err == nil {
			fn(rec.RawSample)
		}
	}
}

// Stop delivers what is left in the ring, then stops the reader. Call it
// after the programs are detached, so nothing is written behind it.
func (r *Ring) Stop() {
	if r.f != nil {
		r.stop.Store(true)
		// A deadline in the past wakes the parked reader now; it then
		// reads what is left and returns.
		r.f.SetReadDeadline(time.Unix(1, 0))
		<-r.done
		r.f.Close()
	} else {
		r.rd.Flush()
		<-r.done
	}
	r.rd.Close()
}

// View returns a ring record as the C struct T it holds (bpf2go's -type
// struct, laid out as on this host), without copying; nil when raw is too
// short. The pointer is valid only until fn returns (the ring reuses the
// record).
func View[T any](raw []byte) *T {
	var zero T
	if len(raw) < int(unsafe.Sizeof(zero)) {
		return nil
	}
	// Ring records are 8-byte aligned, enough for any of our structs.
	return (*T)(unsafe.Pointer(&raw[0]))
}
