package top

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// Options configure a run.
type Options struct {
	Hz        uint64 // sampling rate for hot symbols
	TasksOnly bool   // no sampling
	Frames    int    // plain-text frames to print, then stop (0: full screen)
	Interval  time.Duration
	Rows      int
}

// Run shows frames until ctx ends, Frames are printed, or the user quits.
func Run(ctx context.Context, o Options, w io.Writer) error {
	src, err := NewSource(o.Hz, o.TasksOnly)
	if err != nil {
		return err
	}
	defer src.Close()
	runctl.Ready() // its events count from here
	v := &View{SortBy: Sorts[0], Rows: o.Rows}
	if o.Frames > 0 {
		return batch(ctx, w, src, v, o.Frames, o.Interval)
	}
	return screen(ctx, src, v, o.Interval)
}

func batch(ctx context.Context, w io.Writer, src *Source, v *View, n int, interval time.Duration) error {
	for range n {
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return nil
		}
		f, err := src.Frame()
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n\n", strings.Join(v.Lines(f, 0), "\n")); err != nil {
			return fmt.Errorf("writing a frame: %w", err)
		}
	}
	return nil
}

// screen runs the full-screen view: a frame every interval, keys to sort,
// filter, pause and quit.
func screen(ctx context.Context, src *Source, v *View, interval time.Duration) error {
	scr, err := tcell.NewScreen()
	if err == nil {
		err = scr.Init()
	}
	if err != nil {
		return fmt.Errorf("opening the terminal: %w (use -b N for plain text)", err)
	}
	defer scr.Fini()
	events := make(chan tcell.Event, 16)
	quit := make(chan struct{})
	go scr.ChannelEvents(events, quit)
	defer close(quit)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last *Frame
	prompt, editing := "", false
	draw := func() {
		scr.Clear()
		w, h := scr.Size()
		if last == nil {
			putLine(scr, 0, "sonde top: collecting the first interval…", tcell.StyleDefault)
		} else {
			for i, l := range v.Lines(last, w) {
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
		case <-ctx.Done():
			return nil
		case <-tick.C:
			f, err := src.Frame()
			if err != nil {
				return err
			}
			// Paused, frames are still taken so that unpausing shows the
			// latest interval, not everything since the pause.
			if !v.Paused {
				last = f
				draw()
			}
		case ev := <-events:
			switch e := ev.(type) {
			case *tcell.EventResize:
				scr.Sync()
			case *tcell.EventKey:
				if editing {
					prompt, editing = edit(e, prompt, v)
					break
				}
				switch {
				case e.Key() == tcell.KeyEscape || e.Key() == tcell.KeyCtrlC || e.Rune() == 'q':
					return nil
				case e.Rune() == 's':
					v.NextSort()
				case e.Rune() == 'p' || e.Rune() == ' ':
					v.Paused = !v.Paused
				case e.Rune() == 'f':
					editing, prompt = true, v.Filter
				}
			}
			draw()
		}
	}
}

// edit handles a key while the filter prompt is open; it returns the
// prompt and whether it stays open.
func edit(e *tcell.EventKey, prompt string, v *View) (string, bool) {
	switch e.Key() {
	case tcell.KeyEnter:
		v.Filter = strings.TrimSpace(prompt)
		return prompt, false
	case tcell.KeyEscape:
		return prompt, false
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if len(prompt) > 0 {
			prompt = prompt[:len(prompt)-1]
		}
	case tcell.KeyRune:
		prompt += string(e.Rune())
	}
	return prompt, true
}

func putLine(scr tcell.Screen, y int, s string, st tcell.Style) {
	x := 0
	for _, r := range s {
		scr.SetContent(x, y, r, nil, st)
		x++
	}
}
