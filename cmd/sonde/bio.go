package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sonde-dev/sonde/internal/events"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/latency"
	"github.com/sonde-dev/sonde/internal/pairbpf"
)

// bioStage is one pairing of block tracepoints.
type bioStage struct {
	name, start, end string
}

var (
	stageQueued = bioStage{"queued (insert → issue)", "block:block_rq_insert", "block:block_rq_issue"}
	stageDevice = bioStage{"device (issue → complete)", "block:block_rq_issue", "block:block_rq_complete"}
	stageTotal  = bioStage{"total (insert → complete)", "block:block_rq_insert", "block:block_rq_complete"}
)

// runStages pairs each stage in the kernel at the same time.
func runStages(stages []bioStage, per, aux string, keep bool, d time.Duration) ([]*pairbpf.Result, error) {
	res := make([]*pairbpf.Result, len(stages))
	errs := make([]error, len(stages))
	var wg sync.WaitGroup
	for i, st := range stages {
		o := pairbpf.Options{Key: []string{"dev", "sector"}, Per: per, Aux: aux, Events: keep, Duration: d}
		for j, n := range []string{st.start, st.end} {
			s, err := events.Tracepoint(n)
			if err != nil {
				return nil, err
			}
			if j == 0 {
				o.Start = s
			} else {
				o.End = s
			}
		}
		wg.Add(1)
		go func(i int, o pairbpf.Options) {
			defer wg.Done()
			res[i], errs[i] = pairbpf.Run(context.Background(), o)
		}(i, o)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return res, nil
}

func runBiolat(args []string) (int, error) {
	fs := newFlags("biolat", "[-Q] [-D] [--stages] [-d DURATION] [--unit us] [--linear STEP] [--json]")
	queued := fs.Bool("Q", false, "include the time queued in the kernel (insert → complete)")
	perDisk := fs.Bool("D", false, "one distribution per disk")
	stages := fs.Bool("stages", false, "split queued (insert → issue) from device (issue → complete) time")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	unitFlag := fs.String("unit", "us", "ns, us, ms or s")
	linear := fs.Uint64("linear", 0, "linear buckets of this width (in --unit)")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	unit, err := histogram.ParseUnit(*unitFlag)
	if err != nil {
		return 2, usageError{err.Error()}
	}
	list := []bioStage{stageDevice}
	switch {
	case *stages:
		list = []bioStage{stageQueued, stageDevice}
	case *queued:
		list = []bioStage{stageTotal}
	}
	per := ""
	if *perDisk {
		per = "dev"
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing block I/O latency, Ctrl-C to stop")
	}
	res, err := runStages(list, per, "", false, *duration)
	if err != nil {
		return 1, err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *asJSON {
		type group struct {
			Stage   string             `json:"stage"`
			Disk    string             `json:"disk,omitempty"`
			Stats   histogram.Stats    `json:"stats"`
			Buckets []histogram.Bucket `json:"buckets"`
		}
		var out []group
		var lost uint64
		for i, r := range res {
			lost += r.Counters.Drops + r.Counters.Full
			for _, g := range r.GroupNames() {
				b := r.Groups[g].Log2(unit)
				if *linear > 0 {
					b = r.Groups[g].Linear(unit, *linear)
				}
				out = append(out, group{Stage: list[i].name, Disk: strings.TrimPrefix(g, "dev "), Stats: r.Groups[g].Stats(), Buckets: b})
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return 0, enc.Encode(map[string]any{"unit": unit.Name, "stages": out, "lost": lost})
	}
	for i, r := range res {
		fmt.Fprintf(w, "%s: %d I/Os\n", list[i].name, countPairs(r.Result))
		for _, g := range r.GroupNames() {
			if g != "" {
				fmt.Fprintf(w, "disk %s\n", strings.TrimPrefix(g, "dev "))
			}
			b := r.Groups[g].Log2(unit)
			if *linear > 0 {
				b = r.Groups[g].Linear(unit, *linear)
			}
			histogram.WriteBars(w, b, unit.Name)
			histogram.WriteSummary(w, r.Groups[g].Stats(), unit)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %d lost\n\n", r.Counters.Drops+r.Counters.Full)
	}
	return 0, nil
}

func runBiosnoop(args []string) (int, error) {
	fs := newFlags("biosnoop", "[-p PID] [--comm NAME] [-d DURATION] [--json]")
	pid := fs.Int("p", 0, "only I/O submitted by this process")
	comm := fs.String("comm", "", "only I/O submitted by processes with this name")
	duration := fs.Duration("d", 0, "stop after this long (default: until Ctrl-C)")
	fs.DurationVar(duration, "duration", 0, "same as -d")
	asJSON := fs.Bool("json", false, "JSON lines")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	if isTerminal(2) && *duration == 0 {
		fmt.Fprintln(os.Stderr, "sonde: tracing block I/O, Ctrl-C to stop")
	}
	// Queued and device stages are paired at once; each I/O is the device
	// pair joined with the queued pair that ended when it was issued.
	res, err := runStages([]bioStage{stageQueued, stageDevice}, "rwbs", "nr_sector", true, *duration)
	if err != nil {
		return 1, err
	}
	queued := map[string][]latency.Pair{}
	for _, p := range res[0].Pairs {
		queued[p.Key] = append(queued[p.Key], p)
	}
	type io struct {
		TimeS    float64 `json:"time_s"`
		Comm     string  `json:"comm"`
		Pid      int32   `json:"pid"`
		Disk     string  `json:"disk"`
		RWBS     string  `json:"rwbs"`
		Sector   uint64  `json:"sector"`
		Bytes    uint64  `json:"bytes"`
		QueuedUS float64 `json:"queued_us"`
		DeviceUS float64 `json:"device_us"`
	}
	var ios []io
	for _, p := range res[1].Pairs {
		parts := strings.Split(p.Key, ",")
		disk := strings.Join(parts[:len(parts)-1], ",")
		sector, _ := strconv.ParseUint(parts[len(parts)-1], 10, 64)
		nsec, _ := strconv.ParseUint(p.Aux, 10, 64)
		x := io{TimeS: float64(p.StartNS) / 1e9, Comm: p.Comm, Pid: p.Pid, Disk: disk, RWBS: strings.TrimPrefix(p.Group, "rwbs "),
			Sector: sector, Bytes: nsec * 512, DeviceUS: float64(p.Latency) / 1e3, QueuedUS: -1}
		// The queued pair of this request ended at its issue.
		for _, q := range queued[p.Key] {
			end := q.StartNS + q.Latency
			if end <= p.StartNS+1000 && p.StartNS-end < 1000 {
				x.QueuedUS = float64(q.Latency) / 1e3
				x.Comm, x.Pid = q.Comm, q.Pid // the submitter, not the dispatcher
				break
			}
		}
		if (*pid != 0 && int(x.Pid) != *pid) || (*comm != "" && x.Comm != *comm) {
			continue
		}
		ios = append(ios, x)
	}
	sort.Slice(ios, func(i, j int) bool { return ios[i].TimeS < ios[j].TimeS })
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	if *asJSON {
		enc := json.NewEncoder(w)
		for _, x := range ios {
			enc.Encode(x)
		}
		return 0, nil
	}
	fmt.Fprintf(w, "%-14s %-16s %-7s %-7s %-4s %-12s %-8s %10s %10s\n", "TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES", "QUE(us)", "LAT(us)")
	for _, x := range ios {
		q := "-"
		if x.QueuedUS >= 0 {
			q = fmt.Sprintf("%.1f", x.QueuedUS)
		}
		fmt.Fprintf(w, "%-14.6f %-16s %-7d %-7s %-4s %-12d %-8d %10s %10.1f\n", x.TimeS, x.Comm, x.Pid, x.Disk, x.RWBS, x.Sector, x.Bytes, q, x.DeviceUS)
	}
	lost := res[0].Counters.Drops + res[0].Counters.Full + res[1].Counters.Drops + res[1].Counters.Full
	fmt.Fprintf(w, "# %d I/Os, %d lost\n", len(ios), lost)
	return 0, nil
}
