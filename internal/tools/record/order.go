package record

import "sort"

// pending is a record read from a ring, waiting for its turn.
type pending struct {
	time uint64
	typ  uint32
	misc uint16
	data []byte
	// A sample's user stack walked by the BPF unwinder (auto mode):
	// its key, and whether its record came.
	key    uint64
	walked bool
}

// orderer hands the records of every CPU's ring on in time order. Each
// ring is in time order by itself, but the rings are read one after the
// other: a record read from a later ring may be older than one read
// before it, and a ring may still get records older than one already
// read from another. So a drain takes an instant first (the watermark:
// everything stamped before it is in a ring), reads every ring, and only
// the records stamped up to it are handed on; the rest wait for a later
// round.
type orderer struct {
	queue []pending
	// Records are copied out of the rings into one arena per round; the
	// few that wait for a later round are copied again (done), so the hot
	// path does not allocate per record.
	arena []byte
	first int // the round's first record in queue
	n     int // how many records ready handed on
}

// begin starts a round of reads: the arena of the last one is reused.
func (q *orderer) begin() {
	q.arena = q.arena[:0]
	q.first = len(q.queue)
}

// add queues a record read in this round; its body is copied (the ring
// reuses its space), p.data is set here.
func (q *orderer) add(p pending, body []byte) {
	off := len(q.arena)
	q.arena = append(q.arena, body...)
	p.data = q.arena[off:len(q.arena):len(q.arena)]
	q.queue = append(q.queue, p)
}

// end ends the round of reads: the arena may have moved while it grew, so
// this round's records are sliced from where it is now, and the arrays it
// grew out of are not kept alive by them.
func (q *orderer) end() {
	off := 0
	for i := q.first; i < len(q.queue); i++ {
		n := len(q.queue[i].data)
		q.queue[i].data = q.arena[off : off+n : off+n]
		off += n
	}
}

// ready sorts the queue by time and returns the records stamped at or
// before watermark, in time order; records of one time keep the order
// they were read in (their ring's, and the rings' by CPU). They are
// valid until done.
func (q *orderer) ready(watermark uint64) []pending {
	sort.SliceStable(q.queue, func(i, j int) bool { return q.queue[i].time < q.queue[j].time })
	n := 0
	for n < len(q.queue) && q.queue[n].time <= watermark {
		n++
	}
	q.n = n
	return q.queue[:n]
}

// done drops the records ready handed on and keeps the others for a later
// round, copied out of the arena the next round overwrites.
func (q *orderer) done() {
	q.queue = append(q.queue[:0], q.queue[q.n:]...)
	for i := range q.queue {
		q.queue[i].data = append([]byte(nil), q.queue[i].data...)
	}
	q.n = 0
}

// waiting is how many records wait for a later round.
func (q *orderer) waiting() int { return len(q.queue) }
