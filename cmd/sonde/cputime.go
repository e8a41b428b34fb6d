package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-dev/sonde/internal/cputime"
	"github.com/sonde-dev/sonde/internal/stream"
)

func runCputime(args []string) (int, error) {
	fs := newFlags("cputime", "[-i 1s] [--top N] [--per-cpu] [-p PID | --comm NAME] [--json] [--stream udp://HOST:PORT | tcp://HOST:PORT] [--compare-sampled [-F HZ]] [-d DURATION] [-n COUNT]")
	interval := fs.Duration("i", time.Second, "report interval")
	top := fs.Int("top", 10, "tasks per report (and per CPU with --per-cpu)")
	perCPU := fs.Bool("per-cpu", false, "top tasks per CPU as well")
	pid := fs.Int("p", 0, "only this process's threads")
	comm := fs.String("comm", "", "only tasks with this name")
	asJSON := fs.Bool("json", false, "JSON lines")
	dest := fs.String("stream", "", "also send each report to udp://HOST:PORT or tcp://HOST:PORT")
	compare := fs.Bool("compare-sampled", false, "sample with cpu-clock beside the exact figure and show the estimate's error")
	freq := fs.Uint64("F", 100, "sampling rate for --compare-sampled")
	duration := fs.Duration("d", 0, "stop after this long")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	count := fs.Int("n", 0, "stop after this many reports")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if *interval < 10*time.Millisecond {
		return 2, usageError{"-i: at least 10ms"}
	}
	if *compare && (*freq == 0 || *freq > 100000) {
		return 2, usageError{"-F: between 1 and 100000 Hz"}
	}
	var sender *stream.Sender
	if *dest != "" {
		var err error
		if sender, err = stream.Dial(*dest); err != nil {
			return 1, err
		}
		defer sender.Close()
	}
	tr, err := cputime.Start()
	if err != nil {
		return 1, err
	}
	defer tr.Close()
	var sampler *cputime.Sampler
	if *compare {
		if sampler, err = cputime.NewSampler(*freq); err != nil {
			return 1, err
		}
		defer sampler.Close()
	}
	host, _ := os.Hostname()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	prev, err := tr.Snapshot()
	if err != nil {
		return 1, err
	}
	if sampler != nil {
		sampler.Take()
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var deadline <-chan time.Time
	if *duration > 0 {
		t := time.NewTimer(*duration)
		defer t.Stop()
		deadline = t.C
	}
	reports := 0
	for {
		last := false
		select {
		case <-tick.C:
		case <-deadline:
			last = true
		case <-sigs:
			last = true
		}
		cur, err := tr.Snapshot()
		if err != nil {
			return 1, err
		}
		iv := cputime.Diff(prev, cur, tr.CPUs())
		tr.Prune(prev, cur)
		prev = cur
		var samples map[uint32]uint64
		if sampler != nil {
			samples = sampler.Take()
		}
		iv.Tasks = filterTasks(iv.Tasks, *pid, *comm)
		if samples != nil {
			for i := range iv.Tasks {
				v := samples[iv.Tasks[i].Tid] * sampler.Period
				iv.Tasks[i].SampledNS = &v
			}
		}
		var buf bytes.Buffer
		if *asJSON {
			writeCputimeJSON(&buf, host, iv, *top, *perCPU, tr.Lost(), tr.Unseen(), sampler)
		} else {
			writeCputimeText(&buf, host, iv, *top, *perCPU, tr.Lost(), tr.Unseen(), sampler)
		}
		os.Stdout.Write(buf.Bytes())
		if sender != nil {
			if err := sender.Send(buf.Bytes()); err != nil {
				fmt.Fprintf(os.Stderr, "sonde: stream: %v\n", err)
			}
		}
		reports++
		if last || (*count > 0 && reports >= *count) {
			return 0, nil
		}
	}
}

func filterTasks(ts []cputime.Usage, pid int, comm string) []cputime.Usage {
	if pid == 0 && comm == "" {
		return ts
	}
	var out []cputime.Usage
	for _, t := range ts {
		if (pid == 0 || int(t.Pid) == pid) && (comm == "" || t.Comm == comm) {
			out = append(out, t)
		}
	}
	return out
}

func pct(ns, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(ns) / float64(of)
}

func writeCputimeText(w io.Writer, host string, iv cputime.Interval, top int, perCPU bool, lost, unseen uint64, s *cputime.Sampler) {
	span := iv.EndNS - iv.StartNS
	fmt.Fprintf(w, "sonde cputime %s %s interval %.3fs, %d CPUs, %d slices lost, %d switches unseen\n", host, time.Now().Format("15:04:05"), float64(span)/1e9, len(iv.IdleNS), lost, unseen)
	var cpus []string
	for c := range iv.IdleNS {
		cpus = append(cpus, fmt.Sprintf("cpu%d %5.1f%% busy %5.1f%% idle", c, pct(iv.BusyNS[c], span), pct(iv.IdleNS[c], span)))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(cpus, " | "))
	header := "  %7s %7s %-16s %10s %7s"
	fmt.Fprintf(w, header, "PID", "TID", "COMM", "MS", "CPU%")
	if s != nil {
		fmt.Fprintf(w, " %11s %8s", "SAMPLED-MS", "ERROR")
	}
	fmt.Fprintln(w)
	row := func(u cputime.Usage, ns uint64) {
		fmt.Fprintf(w, "  %7d %7d %-16s %10.3f %7.2f", u.Pid, u.Tid, u.Comm, float64(ns)/1e6, pct(ns, span))
		if s != nil && u.SampledNS != nil && ns == u.NS {
			errPct := 0.0
			if ns > 0 {
				errPct = 100 * (float64(*u.SampledNS) - float64(ns)) / float64(ns)
			}
			fmt.Fprintf(w, " %11.3f %7.1f%%", float64(*u.SampledNS)/1e6, errPct)
		}
		fmt.Fprintln(w)
	}
	for i, u := range iv.Tasks {
		if i >= top {
			break
		}
		row(u, u.NS)
	}
	if perCPU {
		for c := range iv.IdleNS {
			fmt.Fprintf(w, "  cpu%d:\n", c)
			n := 0
			for _, u := range sortedOn(iv.Tasks, c) {
				if n >= top || u.PerCPU[c] == 0 {
					break
				}
				row(u, u.PerCPU[c])
				n++
			}
		}
	}
	fmt.Fprintln(w)
}

func sortedOn(ts []cputime.Usage, cpu int) []cputime.Usage {
	out := append([]cputime.Usage(nil), ts...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerCPU[cpu] > out[j].PerCPU[cpu] })
	return out
}

func writeCputimeJSON(w io.Writer, host string, iv cputime.Interval, top int, perCPU bool, lost, unseen uint64, s *cputime.Sampler) {
	tasks := iv.Tasks
	if top > 0 && len(tasks) > top && !perCPU {
		tasks = tasks[:top]
	}
	if !perCPU {
		for i := range tasks {
			tasks[i].PerCPU = nil
		}
	}
	type cpu struct {
		CPU    int    `json:"cpu"`
		BusyNS uint64 `json:"busy_ns"`
		IdleNS uint64 `json:"idle_ns"`
	}
	var cpus []cpu
	for c := range iv.IdleNS {
		cpus = append(cpus, cpu{c, iv.BusyNS[c], iv.IdleNS[c]})
	}
	out := map[string]any{"host": host, "start_ns": iv.StartNS, "end_ns": iv.EndNS, "cpus": cpus, "tasks": tasks, "lost": lost, "unseen_switches": unseen}
	if s != nil {
		out["sample_period_ns"] = s.Period
	}
	b, _ := json.Marshal(out)
	w.Write(append(b, '\n'))
}

func runListen(args []string) (int, error) {
	fs := newFlags("listen", "udp://:PORT | tcp://:PORT")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if fs.NArg() != 1 {
		return 2, usageError{"give one address: udp://:PORT or tcp://:PORT"}
	}
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sigs; close(stop) }()
	err := stream.Listen(fs.Arg(0), os.Stdout, stop, func(a net.Addr) {
		if isTerminal(2) {
			fmt.Fprintf(os.Stderr, "sonde: listening on %s\n", a.String())
		}
	})
	if err != nil {
		return 1, err
	}
	return 0, nil
}
