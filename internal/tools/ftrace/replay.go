package ftrace

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ReplayOptions select what replay shows.
type ReplayOptions struct {
	MinDuration uint64 // ns
	Depth       int    // show calls at depth < Depth (0: all)
	Tid         int    // one thread (0: all)
	PerThread   bool   // each thread's calls together instead of merged by time
}

// FormatDuration prints d as uftrace does: three decimals of us, ms or s.
func FormatDuration(d uint64) string {
	switch {
	case d < 1_000_000:
		return fmt.Sprintf("%8.3f us", float64(d)/1e3)
	case d < 1_000_000_000:
		return fmt.Sprintf("%8.3f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%8.3f  s", float64(d)/1e9)
}

type line struct {
	time  uint64
	order int // position within its thread
	text  string
}

// Replay writes the calls nested, one line per call, or two (an opening
// line with `{` and a closing line with the duration) when the call has
// callees, in uftrace's layout: DURATION [TID] | FUNCTION.
func Replay(w io.Writer, t *Trace, o ReplayOptions) error {
	cs := ThreadCalls(t, t.Filter(o.MinDuration, o.Depth), o.Tid)
	_, depth := nest(cs)
	var lines []line
	type open struct {
		end  uint64
		text string
	}
	var stack []open
	closeTo := func(n int) {
		for len(stack) > n {
			top := stack[len(stack)-1]
			lines = append(lines, line{top.end, len(lines), top.text})
			stack = stack[:len(stack)-1]
		}
	}
	blank := strings.Repeat(" ", 11)
	for i := range cs {
		c := &cs[i]
		tid := fmt.Sprintf("[%6d] | ", t.P.Threads[c.Thread].Tid)
		keep := depth[i] // callees of the calls on the stack are done
		if i > 0 && cs[i-1].Thread != c.Thread {
			keep = 0 // and so is the last thread
		}
		closeTo(keep)
		indent := strings.Repeat("  ", depth[i])
		name := t.FuncName(c.Fn) + "(" + formatArgs(c.Args) + ")"
		hasCallees := i+1 < len(cs) && cs[i+1].Thread == c.Thread && depth[i+1] > depth[i]
		if !hasCallees {
			lines = append(lines, line{c.Start, len(lines), FormatDuration(c.Dur) + " " + tid + indent + name + formatRet(c) + ";" + unfinishedNote(c)})
			continue
		}
		lines = append(lines, line{c.Start, len(lines), blank + " " + tid + indent + name + " {"})
		closing := "}" + formatRet(c) + " /* " + t.FuncName(c.Fn) + " */" + unfinishedNote(c)
		stack = append(stack, open{c.End(), FormatDuration(c.Dur) + " " + tid + indent + closing})
	}
	closeTo(0)
	if !o.PerThread {
		// Each thread's lines are in time order already: a stable sort
		// by time interleaves the threads without reordering any.
		sort.SliceStable(lines, func(i, j int) bool { return lines[i].time < lines[j].time })
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# DURATION     TID     FUNCTION")
	for _, l := range lines {
		fmt.Fprintln(bw, l.text)
	}
	return bw.Flush()
}

func formatArgs(args []uint64) string {
	var s []string
	for _, a := range args {
		s = append(s, formatValue(a))
	}
	return strings.Join(s, ", ")
}

// formatValue prints small values in decimal (negative ones signed) and
// addresses in hex.
func formatValue(v uint64) string {
	switch {
	case v < 1<<20:
		return strconv.FormatUint(v, 10)
	case int64(v) < 0 && int64(v) > -(1<<20):
		return strconv.FormatInt(int64(v), 10)
	}
	return "0x" + strconv.FormatUint(v, 16)
}

func formatRet(c *Call) string {
	if !c.HasRet {
		return ""
	}
	return " = " + formatValue(c.Ret)
}

func unfinishedNote(c *Call) string {
	if c.Unfinished {
		return " /* still running at the end */"
	}
	return ""
}
