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

// OpenKept opens a tool that reads its stacks' keys only at the end
// (KeepStacks, so the stacks map does not fill meanwhile), and returns
// with the session the one call that ends both: l stopped, the session
// closed.
func (l *Loader) OpenKept(t bpfskel.Tool) (*bpfskel.Session, func(), error) {
	l.KeepStacks()
	s, err := l.Open(t)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {
		l.Stop()
		s.Close()
	}, nil
}
