package bpfskel

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// Ring reads a BPF ring buffer on its own goroutine, one reused record at
// a time (no allocation per event).
type Ring struct {
	rd   *ringbuf.Reader
	done chan struct{}
}

// ringPoll is how often the reader looks at a ring that has not woken it.
const ringPoll = 50 * time.Millisecond

// ReadRing starts reading m; each record's bytes go to fn, which must not
// keep them.
func ReadRing(m *ebpf.Map, fn func([]byte)) (*Ring, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	r := &Ring{rd: rd, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var rec ringbuf.Record
		for {
			// The BPF side wakes the reader only once a batch is waiting
			// (ring_submit in sonde_maps.h); the deadline collects
			// the rest.
			rd.SetDeadline(time.Now().Add(ringPoll))
			err := rd.ReadInto(&rec)
			if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if err == nil {
				fn(rec.RawSample)
			}
		}
	}()
	return r, nil
}

// Stop delivers what is left in the ring, then stops the reader. Call it
// after the programs are detached, so nothing is written behind it.
func (r *Ring) Stop() {
	r.rd.Flush()
	<-r.done
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
