package main

// The unwind-table cache (internal/collect/diskcache): how long a start
// takes with an empty cache (every table built, then written), with the
// cache an earlier run filled (every table read back), and with the cache
// off (built, not written). Wall time from launch to exit and the CPU
// time of sonde (and of the short command it runs, the same in each mode).

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

var cacheReps = flag.Int("cache-reps", 5, "repetitions of each table-cache configuration")

// cacheModes are the states of the cache a run starts in.
var cacheModes = []string{"cold", "warm", "off"}

func tableCacheBench(dir string) {
	out := filepath.Join(dir, "cache.data")
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	cases := [][]string{
		{"profile", "-d", "1"},
		{"record", "-g", "-a", "-d", "1", "-o", out},
		{"offcpu", "-d", "1"},
		{"record", "-g", "-o", out, "--", py, "-c", "pass"},
		{"record", "-g", "-o", out, "--", "sqlite3", ":memory:", "create table t(x)"},
	}
	fmt.Printf("\nUnwind-table cache: start-up with an empty cache (cold), a filled one (warm) and the cache off (SONDE_CACHE=off); %d interleaved runs, medians\n", *cacheReps)
	fmt.Printf("   %-52s %16s %16s %16s %9s\n", "", "cold wall/CPU", "warm wall/CPU", "off wall/CPU", "cold/warm")
	for _, args := range cases {
		warm := filepath.Join(dir, "warm-cache")
		os.RemoveAll(warm)
		runCached(args, []string{"XDG_CACHE_HOME=" + warm}) // fills it
		wall := map[string][]float64{}
		cpu := map[string][]float64{}
		interleave("table cache", *cacheReps, len(cacheModes), func(i int) {
			env := []string{"XDG_CACHE_HOME=" + warm}
			switch cacheModes[i] {
			case "cold":
				cold := filepath.Join(dir, "cold-cache")
				os.RemoveAll(cold)
				env = []string{"XDG_CACHE_HOME=" + cold}
			case "off":
				env = append(env, "SONDE_CACHE=off")
			}
			u := runCached(args, env)
			wall[cacheModes[i]] = append(wall[cacheModes[i]], u.wall)
			cpu[cacheModes[i]] = append(cpu[cacheModes[i]], u.cpu)
		})
		name := strings.Join(args, " ")
		name = strings.Replace(name, out, "X", 1)
		fmt.Printf("   %-52s", "sonde "+trunc(name, 46))
		for _, m := range cacheModes {
			fmt.Printf(" %7.2f/%6.2f s", median(wall[m]), median(cpu[m]))
		}
		fmt.Printf(" %8.2fx\n", median(wall["cold"])/median(wall["warm"]))
	}
	// The tables' own cost, as profile reports it: what a cold start
	// spends building them, what a warm one spends reading them back.
	fmt.Printf("   time in unwind tables (profile --json's unwind_tables), %d interleaved runs, medians:\n", *cacheReps)
	for _, args := range [][]string{{"-d", "1"}, {"--", py, "-c", "pass"}, {"--", "sqlite3", ":memory:", "create table t(x)"}} {
		warm := filepath.Join(dir, "warm-cache")
		os.RemoveAll(warm)
		profileTables(args, []string{"XDG_CACHE_HOME=" + warm})
		ms := map[string][]float64{}
		last := map[string]tableCounts{}
		interleave("table time", *cacheReps, 2, func(i int) {
			env := []string{"XDG_CACHE_HOME=" + warm}
			if i == 0 {
				cold := filepath.Join(dir, "cold-cache")
				os.RemoveAll(cold)
				env = []string{"XDG_CACHE_HOME=" + cold}
			}
			tb := profileTables(args, env)
			m := cacheModes[i]
			ms[m] = append(ms[m], float64(tb.BuildNS+tb.ReadNS)/1e6)
			last[m] = tb
		})
		c, w := last["cold"], last["warm"]
		fmt.Printf("   %-52s cold %6.1f ms (%d built, %d read)  warm %6.1f ms (%d built, %d read)  %6.1fx\n",
			"sonde profile "+strings.Join(args, " "), median(ms["cold"]), c.Built, c.Cached, median(ms["warm"]), w.Built, w.Cached, median(ms["cold"])/median(ms["warm"]))
	}
	warm := filepath.Join(dir, "warm-cache")
	fmt.Printf("   the cache after the last case: %s in %d entries\n", mib(dirSize(filepath.Join(warm, "sonde"))), dirCount(filepath.Join(warm, "sonde")))
}

// runCached runs sonde with args and extra environment, its output dropped.
func runCached(args, env []string) usage {
	cmd := exec.Command(*sondeBin, args...)
	cmd.Env = append(os.Environ(), env...)
	return measure(cmd)
}

type tableCounts struct {
	Built   int   `json:"tables_built"`
	Cached  int   `json:"tables_cached"`
	BuildNS int64 `json:"tables_build_ns"`
	ReadNS  int64 `json:"tables_read_ns"`
}

// profileTables runs sonde profile --json with args and reads its
// unwind_tables.
func profileTables(args, env []string) tableCounts {
	cmd := exec.Command(*sondeBin, append([]string{"profile", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.Output()
	if err != nil {
		fail(fmt.Sprintf("sonde profile --json %s: %v", strings.Join(args, " "), err))
	}
	var doc struct {
		UserStacks struct {
			Tables tableCounts `json:"unwind_tables"`
		} `json:"user_stacks"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		fail(fmt.Sprintf("sonde profile --json: %v", err))
	}
	return doc.UserStacks.Tables
}

func dirSize(dir string) int64 {
	var n int64
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if fi, err := de.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func dirCount(dir string) int {
	des, _ := os.ReadDir(dir)
	return len(des)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
