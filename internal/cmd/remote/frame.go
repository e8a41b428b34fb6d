// Package remote runs sonde's own commands on another machine: `sonde agent`
// serves them to authenticated clients and `sonde --remote HOST:PORT CMD`
// sends a command line there and renders what comes back, here.
//
// The API is one HTTP/2 request per run (POST /v1/run): the body names the
// command line, the response body streams frames (stdout, stderr, each
// output file, the exit status). HTTP/2 rather than gRPC: no generated code
// or gRPC stack in a binary that must stay small on an arm64 board, the same
// TLS and stream cancellation (a client that goes away resets its stream,
// which ends the run), and a stream anyone can read with curl.
package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame kinds in a run's response body.
const (
	frameStdout byte = 'o' // payload: bytes the command wrote to stdout
	frameStderr byte = 'e' // payload: bytes the command wrote to stderr
	frameFile   byte = 'f' // payload: name of the output flag whose file follows
	frameData   byte = 'd' // payload: the next bytes of that file
	frameExit   byte = 'x' // payload: 4-byte big-endian exit status, then a message
)

// maxFrame bounds one frame's payload, so a reader never holds more than
// this of a peer's stream at once.
const maxFrame = 64 << 10

// frameHeader is the kind byte and the 4-byte big-endian payload length.
const frameHeader = 5

// writeFrame writes one frame.
func writeFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("frame of %d bytes: at most %d", len(payload), maxFrame)
	}
	var h [frameHeader]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// frameReader reads frames into one reused buffer.
type frameReader struct {
	r   io.Reader
	buf []byte
}

// next returns the next frame; the payload is valid until the next call.
// A stream that ends between frames returns io.EOF; one cut inside a frame,
// io.ErrUnexpectedEOF.
func (fr *frameReader) next() (byte, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(fr.r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes: at most %d", n, maxFrame)
	}
	switch h[0] {
	case frameStdout, frameStderr, frameFile, frameData, frameExit:
	default:
		return 0, nil, fmt.Errorf("unknown frame kind %q", h[0])
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}

// exitPayload encodes the run's end: its exit status and, when the agent
// ended it or could not run it, why.
func exitPayload(code int, msg string) []byte {
	p := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(p, uint32(int32(code)))
	return append(p, msg...)
}

// parseExit decodes exitPayload.
func parseExit(p []byte) (int, string, error) {
	if len(p) < 4 {
		return 0, "", fmt.Errorf("exit frame of %d bytes: want at least 4", len(p))
	}
	return int(int32(binary.BigEndian.Uint32(p))), string(p[4:]), nil
}
