package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

var ftraceReps = flag.Int("ftrace-reps", 5, "repetitions of each function-graph tracing configuration")

// ftraceCalls is how many leaf() calls each run makes.
const ftraceCalls = 200000

// ftraceBench measures the per-call cost of function-graph tracing:
// leafcalls.c (built with -pg for uftrace, and plain) alone, under
// uftrace record, under sonde ftrace record (in-process for the
// -finstrument-functions build, uprobes for the others) and under sonde
// stat counting a bare uprobe and uretprobe on leaf() (no BPF: the
// kernel's own cost, the floor for any uprobe tracer).
// Interleaved repetitions, medians of the program's own loop time.
func ftraceBench(dir string) {
	build := func(name string, flags ...string) string {
		return gcc(dir, name, "bench/testdata/leafcalls.c", append([]string{"-O1", "-g", "-fno-omit-frame-pointer"}, flags...)...)
	}
	pg, fi, plain := build("leafcalls-pg", "-pg"), build("leafcalls-fi", "-finstrument-functions"), build("leafcalls")
	n := strconv.Itoa(ftraceCalls)
	data := filepath.Join(dir, "ft.data")
	configs := []config{
		{"none (-pg build)", []string{pg, n}},
		{"uftrace record (-pg)", []string{"uftrace", "record", "-d", filepath.Join(dir, "uftrace.data"), pg, n}},
		{"none (-finstrument-functions build)", []string{fi, n}},
		{"uftrace record (-finstrument-functions)", []string{"uftrace", "record", "-d", filepath.Join(dir, "uftrace-fi.data"), fi, n}},
		{"sonde ftrace, in-process (-finstrument)", []string{*sondeBin, "ftrace", "record", "-F", "leaf", "-o", data, "--", fi, n}},
		{"sonde ftrace, in-process (-pg)", []string{*sondeBin, "ftrace", "record", "-F", "leaf", "-o", data, "--", pg, n}},
		{"sonde ftrace, uprobes (-pg build)", []string{*sondeBin, "ftrace", "record", "--mechanism", "uprobe", "-F", "leaf", "-o", data, "--", pg, n}},
		{"sonde ftrace, uprobes (plain build)", []string{*sondeBin, "ftrace", "record", "-F", "leaf", "-o", data, "--", plain, n}},
		{"bare uprobe+uretprobe (floor)", []string{*sondeBin, "stat", "-e", "u:" + plain + ":leaf", "-e", "u:" + plain + ":leaf%return", "--", plain, n}},
	}
	loops := map[string][]float64{}
	interleave("ftrace", *ftraceReps, len(configs), func(i int) {
		loops[configs[i].name] = append(loops[configs[i].name], selfTimed(configs[i], "loop_ns"))
	})
	base := median(loops[configs[0].name])
	baseFI := median(loops["none (-finstrument-functions build)"])
	fmt.Printf("\n6. Function-graph tracing: %d calls of a %.0f ns function (%d interleaved repetitions, medians)\n",
		ftraceCalls, base/ftraceCalls, *ftraceReps)
	cost := map[string]float64{}
	for _, c := range configs {
		m := median(loops[c.name])
		b := base
		if strings.Contains(c.name, "-finstrument") {
			b = baseFI // the hooks' own calls are in the uninstrumented time
		}
		cost[c.name] = (m - b) / ftraceCalls
		fmt.Printf("   %-42s %9.2f ms  %8.3f µs per call\n", c.name, m/1e6, cost[c.name]/1e3)
	}
	if u := cost["uftrace record (-finstrument-functions)"]; u > 0 {
		fmt.Printf("   in-process / uftrace per call (-finstrument-functions): %.2fx (goal ≤ 2)\n", cost["sonde ftrace, in-process (-finstrument)"]/u)
	}
	u := cost["uftrace record (-pg)"]
	if u > 0 {
		fmt.Printf("   in-process / uftrace per call (-pg): %.2fx (goal ≤ 2)\n", cost["sonde ftrace, in-process (-pg)"]/u)
		fmt.Printf("   sonde uprobes / uftrace per call: %.0fx; bare uprobes / uftrace: %.0fx\n",
			cost["sonde ftrace, uprobes (plain build)"]/u, cost["bare uprobe+uretprobe (floor)"]/u)
	}
}
