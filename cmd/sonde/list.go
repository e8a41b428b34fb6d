package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/perf"
	"github.com/sonde-dev/sonde/internal/probe"
	"github.com/sonde-dev/sonde/internal/tracefs"
)

type listedEvent struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Usable bool   `json:"usable"`
	Reason string `json:"reason,omitempty"`
}

func runList(args []string) (int, error) {
	fs := newFlags("list", "[GLOB] [--json]")
	asJSON := fs.Bool("json", false, "JSON output")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	glob := "*"
	if fs.NArg() > 0 {
		glob = fs.Arg(0)
		if !strings.ContainsAny(glob, "*?[") {
			glob = "*" + glob + "*"
		}
	}
	match := func(n string) bool { ok, _ := path.Match(glob, n); return ok }
	var out []listedEvent
	for _, d := range perf.Builtin {
		if !match(d.Name) {
			continue
		}
		e := listedEvent{Name: d.Name, Kind: d.Kind.String(), Usable: true}
		if err := tryOpen(d); err != nil {
			e.Usable, e.Reason = false, err.Error()
		}
		out = append(out, e)
	}
	// PMUs the kernel exposes, with their named events.
	pmus, _ := filepath.Glob("/sys/bus/event_source/devices/*")
	for _, p := range pmus {
		name := filepath.Base(p)
		evs, _ := os.ReadDir(filepath.Join(p, "events"))
		for _, ev := range evs {
			if strings.Contains(ev.Name(), ".") {
				continue // .scale/.unit companions
			}
			n := name + "/" + ev.Name() + "/"
			if match(n) {
				out = append(out, listedEvent{Name: n, Kind: "pmu", Usable: true, Reason: "listed by the kernel"})
			}
		}
	}
	tps, err := tracefs.Events()
	tpReason := ""
	if err != nil {
		tpReason = err.Error()
	}
	probes := map[string]bool{}
	if ps, err := probe.List(); err == nil {
		for _, p := range ps {
			probes[p.Name()] = true
		}
	}
	for _, t := range tps {
		if match(t) {
			kind := "tracepoint"
			if probes[t] {
				kind = "probe"
			}
			out = append(out, listedEvent{Name: t, Kind: kind, Usable: true})
		}
	}
	if tpReason != "" {
		out = append(out, listedEvent{Name: "tracepoints", Kind: "tracepoint", Usable: false, Reason: tpReason})
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return 0, enc.Encode(out)
	}
	sort.SliceStable(out, func(i, j int) bool { return kindOrder(out[i].Kind) < kindOrder(out[j].Kind) })
	fmt.Print("\nList of events (use with -e):\n\n")
	for _, e := range out {
		state := ""
		if !e.Usable {
			state = ", not usable here: " + e.Reason
		}
		fmt.Printf("  %-50s [%s event%s]\n", e.Name, kindTitle(e.Kind), state)
	}
	fmt.Println()
	return 0, nil
}

func kindOrder(k string) int {
	return map[string]int{"hardware": 0, "software": 1, "hardware-cache": 2, "pmu": 3, "tracepoint": 4, "probe": 5}[k]
}

func kindTitle(k string) string {
	return map[string]string{"hardware": "Hardware", "software": "Software", "hardware-cache": "Hardware cache", "pmu": "Kernel PMU", "tracepoint": "Tracepoint", "probe": "Probe"}[k]
}

// tryOpen opens a counting event on this thread to see if it works here.
func tryOpen(d perf.EventDef) error {
	attr := unix.PerfEventAttr{Type: d.Type, Config: d.Config, Bits: unix.PerfBitDisabled | unix.PerfBitExcludeHv}
	attr.Size = uint32(perf.AttrSize)
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		switch err {
		case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
			return fmt.Errorf("no usable hardware PMU (common in VMs)")
		case unix.EACCES, unix.EPERM:
			return fmt.Errorf("no permission (CAP_PERFMON or kernel.perf_event_paranoid)")
		}
		return err
	}
	unix.Close(fd)
	return nil
}
