package record

import (
	"fmt"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
)

// chunkWriter is where chunks go: a *datafile.File (a *datafile.Writer in
// tests).
type chunkWriter interface {
	Chunk(p *model.Profile) error
	Rewrite()
	Finish(p *model.Profile) error
}

// chunkSource is the profile being built: a *builder.Builder.
type chunkSource interface {
	Partial(meta model.Meta) *model.Profile
	DropSamples()
}

// chunker writes the data file in chunks while the recording runs, one
// every ChunkEvery at most, so memory stays flat and a recording cut
// short reads back up to its last chunk. A write error ends the chunks;
// the recording then stops (the session's loop checks failed).
type chunker struct {
	out   chunkWriter // nil: no data file, never a chunk
	every time.Duration
	last  time.Time // the last chunk, or the chunker's start
	err   error     // the write error that ended the chunks
	kept  time.Duration
}

// newChunker starts counting the first interval at now.
func newChunker(out chunkWriter, every time.Duration, now time.Time) *chunker {
	return &chunker{out: out, every: every, last: now}
}

// due says whether a chunk is to be written at now: a data file is
// written, nothing has failed and an interval has passed since the last.
func (c *chunker) due(now time.Time) bool {
	return c.out != nil && c.err == nil && now.Sub(c.last) >= c.every
}

// write writes the profile so far, described by meta (which holds the
// recording's first meta.DurationNS), as a chunk, then forgets its
// samples: they are on disk. The next interval starts at now.
func (c *chunker) write(now time.Time, src chunkSource, meta model.Meta) {
	c.last = now
	if c.err = c.out.Chunk(src.Partial(meta)); c.err == nil {
		src.DropSamples()
		c.kept = time.Duration(meta.DurationNS)
	}
}

// failed says whether a write failed: no chunk follows.
func (c *chunker) failed() bool { return c.err != nil }

// stopped is the error a failed write ends the recording with (nil if
// none failed); remove says the file holds no complete chunk, and is
// better removed than left reading as nothing.
func (c *chunker) stopped(path string) (remove bool, err error) {
	switch {
	case c.err == nil:
		return false, nil
	case c.kept == 0:
		return true, fmt.Errorf("recording stopped: %w (nothing was kept)", c.err)
	}
	// What was written reads back as a cut recording.
	return false, fmt.Errorf("recording stopped: %w (%s keeps the first %s)", c.err, path, c.kept.Round(time.Millisecond))
}

// finish writes the final chunk, p whole: the symbolize pass named every
// location, so its tables replace the recorded addresses written before.
func (c *chunker) finish(p *model.Profile) error {
	c.out.Rewrite()
	return c.out.Finish(p)
}
