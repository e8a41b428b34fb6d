package unwind

import "github.com/sonde-dev/sonde/internal/collect/bpfskel"

// Open opens a tool wired to l (Wire): on failure l is stopped as well,
// so the caller has only the session to close, and l to stop after it.
func (l *Loader) Open(t bpfskel.Tool) (*bpfskel.Session, error) {
	s, err := bpfskel.Open(t)
	if err != nil {
		l.Stop()
		return nil, err
	}
	return s, nil
}
