package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// textJSONView is a report that writes itself as text or JSON.
type textJSONView interface {
	WriteText(io.Writer)
	WriteJSON(io.Writer) error
}

// writeView writes v to w as JSON or as text.
func writeView(w io.Writer, v textJSONView, asJSON bool) error {
	if asJSON {
		return v.WriteJSON(w)
	}
	v.WriteText(w)
	return nil
}

// interruptible returns a context that ends on Ctrl-C or SIGTERM: the one
// way a live command learns it should stop and print what it has.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
