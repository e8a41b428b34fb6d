package record

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// run drains the rings in rounds until the recording ends, writing a
// chunk when one is due; a failed write ends it too.
func (s *session) run(ctx context.Context) {
	pfds := make([]unix.PollFd, len(s.ringList), len(s.ringList)+1)
	for i, r := range s.ringList {
		pfds[i] = unix.PollFd{Fd: int32(r.FD), Events: unix.POLLIN}
	}
	if wake, stop := s.wakeOnEnd(ctx); wake >= 0 {
		defer stop()
		pfds = append(pfds, unix.PollFd{Fd: int32(wake), Events: unix.POLLIN})
	}
	lastProgress := time.Now()
	lastAlive := time.Now()
	// The rounds stop as soon as the recording is to end: stop disables
	// the events at once, and drains what they wrote.
	for !s.ended(ctx, &lastAlive) {
		unix.Poll(pfds, s.pollTimeout(time.Now()))
		s.process(s.drain())
		now := time.Now()
		if s.o.Progress != nil && now.Sub(lastProgress) >= time.Second {
			s.o.Progress(s.b.SampleCount(), s.lost, now.Sub(s.began))
			lastProgress = now
		}
		s.chunk(now)
		if s.chunks.failed() {
			break
		}
	}
}

// wakeOnEnd returns a descriptor that polls readable as soon as ctx is
// cancelled or the command exits, so the round waiting on the rings ends
// then and not up to 100 ms later (half of a short recording's finish),
// and a function that stops watching; -1 when no eventfd can be had (the
// rounds then notice at their timeout).
func (s *session) wakeOnEnd(ctx context.Context) (int, func()) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, nil
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-s.childDone: // nil without a command: never
		case <-done:
			return
		}
		var one [8]byte
		one[0] = 1
		unix.Write(fd, one[:])
	})
	return fd, func() {
		close(done)
		wg.Wait()
		unix.Close(fd)
	}
}

// pollTimeout is how long a round waits for the rings at now, in ms:
// 100, or less when the duration ends sooner, so the events are disabled
// when it ends rather than up to a round later.
func (s *session) pollTimeout(now time.Time) int {
	const round = 100 * time.Millisecond
	if s.deadline.IsZero() {
		return int(round / time.Millisecond)
	}
	left := s.deadline.Sub(now)
	if left >= round {
		return int(round / time.Millisecond)
	}
	if left <= 0 {
		return 0
	}
	return int((left + time.Millisecond - 1) / time.Millisecond)
}

// ended says whether the recording is to end, and notes why: ctx was
// cancelled, the command exited, the duration passed, or every -p
// process exited (looked at every 250 ms, at lastAlive).
func (s *session) ended(ctx context.Context, lastAlive *time.Time) bool {
	select {
	case <-ctx.Done():
		s.why = runctl.Cancelled
		return true
	case <-s.childDone:
		s.why = runctl.Done
		return true
	default:
	}
	if !s.deadline.IsZero() && !time.Now().Before(s.deadline) {
		s.why = runctl.Deadline
		return true
	}
	if len(s.o.Pids) > 0 && s.child == nil && time.Since(*lastAlive) >= 250*time.Millisecond {
		// As perf does, -p ends when every target process has exited.
		*lastAlive = time.Now()
		if !anyAlive(s.o.Pids) {
			s.why = runctl.Done
			return true
		}
	}
	return false
}

// drain reads every ring into the orderer and returns the watermark: the
// instant, taken before the reads, up to which every record is in.
func (s *session) drain() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	watermark := uint64(ts.Nano())
	s.ord.begin()
	for _, r := range s.ringList {
		r.Read(func(typ uint32, misc uint16, body []byte) {
			p := pending{time: perf.RecordTime(typ, body), typ: typ, misc: misc}
			if s.w != nil && typ == perf.RecordSample && s.w.take(r.CPU, body, &p) {
				return
			}
			s.ord.add(p, body)
		})
	}
	s.ord.end()
	return watermark
}

// process hands the records stamped up to watermark to the builder, in
// time order.
func (s *session) process(watermark uint64) {
	ready := s.ord.ready(watermark)
	for i := range ready {
		s.handle(&ready[i])
	}
	if s.w != nil {
		s.w.round()
	}
	s.ord.done()
}

// handle gives one record to the builder, or counts it (lost, throttled).
func (s *session) handle(rec *pending) {
	switch rec.typ {
	case perf.RecordSample:
		if perf.ParseSampleRaw(rec.data, s.o.Callchain, s.raw, &s.sample) == nil {
			if s.w != nil {
				s.w.user(&s.sample, rec.key, rec.walked)
			}
			s.b.SampleEvent(&s.sample, rec.misc, s.idToEvent[s.sample.ID])
		}
	case perf.RecordMmap, perf.RecordMmap2:
		if m, err := perf.ParseMmap(rec.typ, rec.misc, rec.data); err == nil {
			s.b.Mmap(m)
		}
	case perf.RecordComm:
		if c, err := perf.ParseComm(rec.misc, rec.data); err == nil {
			s.b.Comm(c)
		}
	case perf.RecordFork:
		if t, err := perf.ParseTask(rec.data); err == nil {
			s.b.Fork(t)
		}
	case perf.RecordLost, perf.RecordLostSamples:
		s.lost += perf.ParseLost(rec.typ, rec.data)
	case perf.RecordThrottle:
		s.meta.Throttled++
	}
}

// chunk writes a chunk of the data file at now if one is due.
func (s *session) chunk(now time.Time) {
	if !s.chunks.due(now) {
		return
	}
	m := s.meta
	m.DurationNS, m.Lost = uint64(now.Sub(s.began).Nanoseconds()), s.lost
	s.chunks.write(now, s.b, m)
}

// stop disables the events, ends the command and hands on every record
// left in the rings.
func (s *session) stop() {
	for _, r := range s.ringList {
		perf.Disable(r.FD)
	}
	// Every event: those of -p's and -t's other threads write into a
	// ring they do not own.
	for _, fd := range s.fds {
		perf.Disable(fd)
	}
	// No sample comes now: the kernel's symbols are read while the rings
	// drain and the command ends, and the walker's loader stops loading
	// (its tables serve walks, and none will come).
	s.b.Warm()
	if s.w != nil {
		s.w.ld.Settle()
	}
	// The recording's span ends here: no event counts after this, however
	// long the command takes to go and the rings to drain; of a command
	// that exited, when it exited (seen up to a round before).
	s.end = time.Now()
	if s.child != nil && s.why == runctl.Done {
		if t := s.child.ExitedAt(); !t.IsZero() && t.Before(s.end) {
			s.end = t
		}
	}
	s.warnSharedTracepoints()
	if s.child != nil {
		s.exit = s.child.End(s.why)
	}
	s.process(s.drain())
	s.process(^uint64(0))
}

// warnSharedTracepoints warns of each tracepoint another BPF program is
// attached to: the kernel drops a hit for every perf event when one of
// its programs returns 0.
func (s *session) warnSharedTracepoints() {
	for _, ev := range slices.Sorted(maps.Keys(s.tpFD)) {
		mine := uint32(0)
		if s.w != nil {
			mine = s.w.programID(s.o.Events[ev])
		}
		if ids := foreignPrograms(s.tpFD[ev], mine); len(ids) > 0 {
			s.meta.Warnings = append(s.meta.Warnings, fmt.Sprintf("%d other BPF program(s) (ids %v) are attached to %s: the kernel drops its samples whenever one of them returns 0 (bpftrace's do)", len(ids), ids, s.o.Events[ev]))
		}
	}
}

// namingMemLimit is the heap's soft limit while the frames are named.
const namingMemLimit = 64 << 20

// finish names the profile and finishes the data file, or says how a
// failed write left it.
func (s *session) finish() (*Result, error) {
	s.meta.DurationNS = uint64(s.end.Sub(s.began).Nanoseconds())
	s.meta.Lost = s.lost
	s.meta.ExitCode = s.exit
	if remove, err := s.chunks.stopped(s.o.Output); err != nil {
		if remove {
			s.out.Remove()
			s.out = nil
		}
		return nil, err
	}
	res := s.res
	res.Samples, res.ExitCode = s.b.SampleCount(), s.exit
	if s.w != nil {
		res.Walk = s.w.finish()
		s.meta.UserStacks = &res.Walk.Stacks // report says it too
	}
	s.closeEvents()
	if res.CallGraphNote != "" {
		s.meta.Warnings = append(s.meta.Warnings, "call graph: frame pointers, "+res.CallGraphNote)
	}
	// Naming opens every object once, line tables and all: garbage from
	// one object must be collected before the next is read, at the usual
	// pace. The recording's 32 MB memory limit is raised to namingMemLimit:
	// the line tables of one Go binary alone pass 32 MB, and under it the
	// collector ran without pause (a third of the finish's CPU); with no
	// limit at all the heap doubled past what naming holds, and a 60 s
	// system-wide record beside a CPU hog peaked at 107 MB.
	debug.SetGCPercent(s.gcPercent)
	debug.SetMemoryLimit(min(s.memLimit, namingMemLimit))
	res.Profile = s.b.Finish(s.meta)
	if s.out == nil {
		return res, nil
	}
	out := s.out
	s.out = nil // finished, not to be aborted by close
	err := s.chunks.finish(res.Profile)
	res.Old = out.Old
	if err != nil {
		return nil, err
	}
	return res, nil
}
