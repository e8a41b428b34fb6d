package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/sonde-dev/sonde/internal/cputime"
	"github.com/sonde-dev/sonde/internal/profile"
	"github.com/sonde-dev/sonde/internal/symbolize"
)

// topFrame is one refresh of sonde top: hot symbols (sampled) and exact
// per-task CPU time (sched_switch) over the last interval.
type topFrame struct {
	At      time.Time
	Span    time.Duration
	Busy    []float64 // per CPU, percent
	Samples uint64
	Symbols []topSym
	Tasks   []cputime.Usage
}

type topSym struct {
	Sym, DSO string
	Kernel   bool
	Count    uint64
}

// topSource produces frames.
type topSource struct {
	tr    *cputime.Tracer
	live  *profile.Live
	names *symbolize.Live
	prev  cputime.Snapshot
	last  time.Time
}

func newTopSource(hz uint64, tasksOnly bool) (*topSource, error) {
	s := &topSource{}
	var err error
	if s.tr, err = cputime.Start(); err != nil {
		return nil, err
	}
	if !tasksOnly {
		if s.live, err = profile.StartLive(hz); err != nil {
			s.tr.Close()
			return nil, err
		}
		s.names = symbolize.NewLive()
	}
	if s.prev, err = s.tr.Snapshot(); err != nil {
		s.close()
		return nil, err
	}
	s.last = time.Now()
	return s, nil
}

func (s *topSource) close() {
	s.tr.Close()
	if s.live != nil {
		s.live.Close()
	}
}

func (s *topSource) frame() (*topFrame, error) {
	cur, err := s.tr.Snapshot()
	if err != nil {
		return nil, err
	}
	iv := cputime.Diff(s.prev, cur, s.tr.CPUs())
	s.tr.Prune(s.prev, cur)
	s.prev = cur
	f := &topFrame{At: time.Now(), Span: time.Duration(iv.EndNS - iv.StartNS), Tasks: iv.Tasks}
	for c := range iv.BusyNS {
		f.Busy = append(f.Busy, pct(iv.BusyNS[c], iv.EndNS-iv.StartNS))
	}
	if s.live != nil {
		hits, err := s.live.Take()
		if err != nil {
			return nil, err
		}
		agg := map[string]*topSym{}
		for _, h := range hits {
			sym, dso := s.names.Name(h.Pid, h.Addr, h.Kernel)
			k := sym + "\x00" + dso
			if agg[k] == nil {
				agg[k] = &topSym{Sym: sym, DSO: dso, Kernel: h.Kernel}
			}
			agg[k].Count += h.Count
			f.Samples += h.Count
		}
		for _, v := range agg {
			f.Symbols = append(f.Symbols, *v)
		}
		sort.Slice(f.Symbols, func(i, j int) bool {
			if f.Symbols[i].Count != f.Symbols[j].Count {
				return f.Symbols[i].Count > f.Symbols[j].Count
			}
			return f.Symbols[i].Sym < f.Symbols[j].Sym
		})
		s.names.Forget()
	}
	return f, nil
}

type topView struct {
	sortBy string // cpu, pid, comm
	filter string
	paused bool
	rows   int
}

var topSorts = []string{"cpu", "pid", "comm"}

func (v *topView) tasks(f *topFrame) []cputime.Usage {
	var out []cputime.Usage
	for _, t := range f.Tasks {
		if v.filter != "" && t.Comm != v.filter && strconv.Itoa(int(t.Pid)) != v.filter && !strings.Contains(t.Comm, v.filter) {
			continue
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		switch v.sortBy {
		case "pid":
			if out[i].Pid != out[j].Pid {
				return out[i].Pid < out[j].Pid
			}
			return out[i].Tid < out[j].Tid
		case "comm":
			return out[i].Comm < out[j].Comm
		}
		return out[i].NS > out[j].NS
	})
	return out
}

// lines renders a frame as text lines (for the screen and for -b).
func (v *topView) lines(f *topFrame, width int) []string {
	var out []string
	var cpus []string
	for c, b := range f.Busy {
		cpus = append(cpus, fmt.Sprintf("cpu%d %5.1f%%", c, b))
	}
	state := ""
	if v.paused {
		state = "  [paused]"
	}
	filter := ""
	if v.filter != "" {
		filter = "  filter: " + v.filter
	}
	out = append(out, fmt.Sprintf("sonde top  %s  %s  sort: %s%s%s", f.At.Format("15:04:05"), strings.Join(cpus, "  "), v.sortBy, filter, state))
	out = append(out, "keys: q quit  s sort  f filter  p pause")
	if f.Symbols != nil || f.Samples > 0 {
		out = append(out, "", fmt.Sprintf("Hot symbols (%d samples, system-wide)", f.Samples))
		out = append(out, fmt.Sprintf("%8s  %-3s %-40s %s", "OVERHEAD", "", "SYMBOL", "SHARED OBJECT"))
		for i, s := range f.Symbols {
			if i >= v.rows {
				break
			}
			mark := "[.]"
			if s.Kernel {
				mark = "[k]"
			}
			out = append(out, fmt.Sprintf("%7.2f%%  %s %-40s %s", 100*float64(s.Count)/float64(max(f.Samples, 1)), mark, trunc(s.Sym, 40), s.DSO))
		}
	}
	out = append(out, "", fmt.Sprintf("Tasks (exact CPU time from sched_switch over %.2fs)", f.Span.Seconds()))
	out = append(out, fmt.Sprintf("%7s %7s %-16s %7s %10s", "PID", "TID", "COMM", "CPU%", "MS"))
	for i, t := range v.tasks(f) {
		if i >= v.rows {
			break
		}
		out = append(out, fmt.Sprintf("%7d %7d %-16s %7.2f %10.3f", t.Pid, t.Tid, t.Comm, pct(t.NS, uint64(f.Span)), float64(t.NS)/1e6))
	}
	for i := range out {
		out[i] = trunc(out[i], width)
	}
	return out
}

func trunc(s string, n int) string {
	if n > 0 && len(s) > n {
		return s[:n]
	}
	return s
}

func runTop(args []string) (int, error) {
	fs := newFlags("top", "[-F HZ] [--tasks] [-b N] [-i INTERVAL] [--rows N]")
	hz := fs.Uint64("F", 997, "sampling rate for hot symbols")
	tasksOnly := fs.Bool("tasks", false, "tasks only (no symbol sampling)")
	batch := fs.Int("b", 0, "print N plain-text frames and exit (for pipes)")
	interval := fs.Duration("i", time.Second, "refresh interval")
	rows := fs.Int("rows", 15, "rows per table")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *interval < 100*time.Millisecond {
		return 2, usageError{"-i: at least 100ms"}
	}
	src, err := newTopSource(*hz, *tasksOnly)
	if err != nil {
		return 1, err
	}
	defer src.close()
	view := &topView{sortBy: "cpu", rows: *rows}
	if *batch > 0 || !isTerminal(1) {
		n := *batch
		if n == 0 {
			n = 1
		}
		return 0, topBatch(os.Stdout, src, view, n, *interval)
	}
	return topScreen(src, view, *interval)
}

func topBatch(w io.Writer, src *topSource, view *topView, n int, interval time.Duration) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for i := 0; i < n; i++ {
		select {
		case <-time.After(interval):
		case <-sigs:
			return nil
		}
		f, err := src.frame()
		if err != nil {
			return err
		}
		for _, l := range view.lines(f, 0) {
			fmt.Fprintln(w, l)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func topScreen(src *topSource, view *topView, interval time.Duration) (int, error) {
	scr, err := tcell.NewScreen()
	if err != nil {
		return 1, fmt.Errorf("opening the terminal: %w (use -b N for plain text)", err)
	}
	if err := scr.Init(); err != nil {
		return 1, fmt.Errorf("opening the terminal: %w (use -b N for plain text)", err)
	}
	defer scr.Fini()
	events := make(chan tcell.Event, 16)
	quit := make(chan struct{})
	go scr.ChannelEvents(events, quit)
	defer close(quit)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last *topFrame
	prompt := ""
	editing := false
	draw := func() {
		scr.Clear()
		w, h := scr.Size()
		if last == nil {
			putLine(scr, 0, "sonde top: collecting the first interval…", tcell.StyleDefault)
		} else {
			for i, l := range view.lines(last, w) {
				if i >= h-1 {
					break
				}
				st := tcell.StyleDefault
				if i == 0 || strings.HasPrefix(l, "Hot symbols") || strings.HasPrefix(l, "Tasks") {
					st = st.Bold(true)
				}
				putLine(scr, i, l, st)
			}
		}
		if editing {
			putLine(scr, h-1, "filter (comm or pid, empty for none): "+prompt, tcell.StyleDefault.Reverse(true))
		}
		scr.Show()
	}
	draw()
	for {
		select {
		case <-sigs:
			return 0, nil
		case <-tick.C:
			if view.paused {
				// Keep the interval fresh so unpausing shows recent data.
				src.frame()
				continue
			}
			f, err := src.frame()
			if err != nil {
				scr.Fini()
				return 1, err
			}
			last = f
			draw()
		case ev := <-events:
			switch e := ev.(type) {
			case *tcell.EventResize:
				scr.Sync()
				draw()
			case *tcell.EventKey:
				if editing {
					switch e.Key() {
					case tcell.KeyEnter:
						view.filter, editing = strings.TrimSpace(prompt), false
					case tcell.KeyEscape:
						editing = false
					case tcell.KeyBackspace, tcell.KeyBackspace2:
						if len(prompt) > 0 {
							prompt = prompt[:len(prompt)-1]
						}
					case tcell.KeyRune:
						prompt += string(e.Rune())
					}
					draw()
					continue
				}
				switch {
				case e.Key() == tcell.KeyEscape || e.Key() == tcell.KeyCtrlC || e.Rune() == 'q':
					return 0, nil
				case e.Rune() == 's':
					for i, s := range topSorts {
						if s == view.sortBy {
							view.sortBy = topSorts[(i+1)%len(topSorts)]
							break
						}
					}
				case e.Rune() == 'p' || e.Rune() == ' ':
					view.paused = !view.paused
				case e.Rune() == 'f':
					editing, prompt = true, view.filter
				}
				draw()
			}
		}
	}
}

func putLine(scr tcell.Screen, y int, s string, st tcell.Style) {
	x := 0
	for _, r := range s {
		scr.SetContent(x, y, r, nil, st)
		x++
	}
}
