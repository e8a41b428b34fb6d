package perf

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is one perf mmap ring buffer: a metadata page followed by 2^n data
// pages that the kernel fills and we drain.
type Ring struct {
	FD   int
	CPU  int
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
	buf  []byte // scratch for records that wrap around the end
}

// NewRing maps pages data pages (a power of two) for fd.
func NewRing(fd, cpu, pages int) (*Ring, error) {
	ps := unix.Getpagesize()
	mem, err := unix.Mmap(fd, 0, ps*(pages+1), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping perf ring (%d pages; see kernel.perf_event_mlock_kb): %w", pages, err)
	}
	r := &Ring{FD: fd, CPU: cpu, mem: mem}
	r.meta = (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	r.data = mem[ps:]
	return r, nil
}

// Read calls fn for every complete record in the ring, then frees the space.
// The slice passed to fn is only valid during the call.
func (r *Ring) Read(fn func(typ uint32, misc uint16, body []byte)) {
	head := atomic.LoadUint64(&r.meta.Data_head)
	tail := r.meta.Data_tail
	size := uint64(len(r.data))
	for tail+8 <= head {
		off := tail % size
		hdr := r.at(off, 8)
		typ := le32(hdr[0:])
		misc := le16(hdr[4:])
		sz := uint64(le16(hdr[6:]))
		if sz < 8 || tail+sz > head {
			break
		}
		body := r.at((off+8)%size, int(sz-8))
		fn(typ, misc, body)
		tail += sz
	}
	atomic.StoreUint64(&r.meta.Data_tail, tail)
}

// at returns n bytes at off, copying when they wrap around the ring's end.
func (r *Ring) at(off uint64, n int) []byte {
	size := uint64(len(r.data))
	if off+uint64(n) <= size {
		return r.data[off : off+uint64(n)]
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	k := copy(b, r.data[off:])
	copy(b[k:], r.data[:n-k])
	return b
}

// Close unmaps the ring and closes its fd.
func (r *Ring) Close() error {
	err := unix.Munmap(r.mem)
	unix.Close(r.FD)
	return err
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }
