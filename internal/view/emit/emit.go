// Package emit writes a command's reports to the user: as text or as JSON,
// a run's final report as one document and interval reports as JSON Lines,
// each flushed as soon as it is whole.
package emit

import (
	"bufio"
	"io"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Report is a view that writes itself as text and as JSON.
type Report interface {
	WriteText(io.Writer)
	WriteJSON(io.Writer) error // one document
}

// Writer writes reports in one form.
type Writer struct {
	*bufio.Writer
	JSON  bool
	Lines bool // the final report too as a line (after interval lines)
}

// New writes to w, as JSON when asJSON.
func New(w io.Writer, asJSON bool) *Writer { return &Writer{Writer: bufio.NewWriter(w), JSON: asJSON} }

// Final writes a run's last report.
func (w *Writer) Final(r Report) error {
	if w.JSON && w.Lines {
		if err := jsonout.Line(w, r); err != nil {
			return err
		}
	} else if w.JSON {
		if err := r.WriteJSON(w); err != nil {
			return err
		}
	} else {
		r.WriteText(w)
	}
	return w.Flush()
}

// Interval writes one interval's report: a line of JSON, or text. Errors
// surface at the next Final or Flush.
func (w *Writer) Interval(r Report) {
	if w.JSON {
		jsonout.Line(w, r)
	} else {
		r.WriteText(w)
	}
	w.Flush()
}
