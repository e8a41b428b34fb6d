package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sonde-dev/sonde/internal/view/jsonout"
)

// textJSONView is a report that writes itself as text or JSON.
type textJSONView interface {
	WriteText(io.Writer)
	WriteJSON(io.Writer) error
}

// writeView writes a run's final report as one JSON document or as text.
func writeView(w *bufio.Writer, v textJSONView, asJSON bool) error {
	if asJSON {
		if err := v.WriteJSON(w); err != nil {
			return err
		}
	} else {
		v.WriteText(w)
	}
	return w.Flush()
}

// writeInterval writes one interval's report now: as a line of JSON
// (JSON Lines) or as text.
func writeInterval(w *bufio.Writer, v textJSONView, asJSON bool) {
	if asJSON {
		jsonout.Line(w, v)
	} else {
		v.WriteText(w)
	}
	w.Flush()
}

// interruptible returns a context that ends on Ctrl-C or SIGTERM: the one
// way a live command learns it should stop and print what it has.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
