package record

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress returns an Options.Progress that redraws one status line on w
// (a terminal), and a function that clears it.
func Progress(w io.Writer) (func(samples int, lost uint64, elapsed time.Duration), func()) {
	return func(n int, lost uint64, el time.Duration) {
			fmt.Fprintf(w, "\rsonde: recording %s, %d samples, %d lost ", el.Round(time.Second), n, lost)
		}, func() {
			fmt.Fprint(w, "\r\033[K")
		}
}

// Summarize writes the line perf record ends with, and the recording's
// warnings, one a line.
func Summarize(w io.Writer, res *Result, path, size string) {
	p := res.Profile
	fmt.Fprintf(w, "sonde: %d samples (%d lost) in %s written to %s (%s)\n",
		res.Samples, p.Meta.Lost, time.Duration(p.Meta.DurationNS).Round(time.Millisecond), path, size)
	if res.CallGraph != "" {
		fmt.Fprintf(w, "sonde: call graph: %s\n", describe(res.CallGraph, res.CallGraphNote))
	}
	if res.Walk != nil {
		fmt.Fprintf(w, "sonde: user %s\n", &res.Walk.Stacks)
		if ws := res.Walk; ws.Unpaired > 0 || ws.Unreadable > 0 || ws.OutputErrors > 0 {
			fmt.Fprintf(w, "sonde: warning: %d samples without their walked stack (%d the kernel could not write: %d ring full, %d no output event, %d other; %d not found in the stacks map; unpaired: %d with no record before them, %d after another thread's)\n",
				ws.Unpaired+ws.Unreadable, ws.OutputErrors, ws.OutputRingFull, ws.OutputNoEvent, ws.OutputOther, ws.Unreadable, ws.UnpairedNoRecord, ws.UnpairedOtherThread)
		}
	}
	if res.Walk != nil && res.Walk.Loader.Python.Refused > 0 {
		py := res.Walk.Loader.Python
		fmt.Fprintf(w, "sonde: warning: Python frames not walked in %d process(es): %s\n", py.Refused, py.LastError)
	}
	for _, warn := range p.Meta.Warnings {
		if res.CallGraphNote != "" && strings.HasPrefix(warn, "call graph:") {
			continue // just said
		}
		fmt.Fprintf(w, "sonde: warning: %s\n", warn)
	}
}
