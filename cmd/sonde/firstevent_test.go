package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestFirstEventsOfACommand: a command that works from main's first
// instruction (testdata/first.c: no warm-up, no sleep) is traced whole by
// every tool's -- CMD mode, its tables in place before the exec: every
// byte it leaks, every µs it blocks and every sample of its work is
// attributed to the function that did it, with a stack that reaches
// _start. What the process does before main (the dynamic loader) and
// after it (exit) is allowed, when its stack is whole too. Five runs of
// each, a CPU hog beside.
func TestFirstEventsOfACommand(t *testing.T) {
	dir, bin := testutil.Workload(t, "first", []string{"first.c"}, "-O2", "-fomit-frame-pointer", "-fno-optimize-sibling-calls")
	cpuHog(t)
	cases := []struct {
		tool string
		args []string // before -- CMD
		cmd  []string
		fn   string // the chain under main every unit of work passes through
		want uint64 // at least this many units of work (bytes, µs, samples)
	}{
		{"memleak", nil, []string{"leak", "2000"}, "main;run_leak;leak_here", 2000 * 128},
		// 30 sleeps of 10 ms; 29 of them at least (one fell short of its
		// 10,000 µs once in CI: 296,538 µs, none of it wrong).
		{"offcpu", []string{"--comm", "first"}, []string{"block", "30"}, "main;run_block;block_here", 29 * 10000},
		{"profile", []string{"-F", "999"}, []string{"spin", "300"}, "main;run_spin;spin_here", 150},
		{"record", []string{"-q", "-g", "-F", "999"}, []string{"spin", "300"}, "main;run_spin;spin_here", 150},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			for run := 1; run <= 5; run++ {
				data := filepath.Join(dir, fmt.Sprintf("%s%d.data", c.tool, run))
				args := append(append(append([]string{c.tool}, c.args...), "-o", data, "--", bin), c.cmd...)
				// The unwinder's trace, shown when a run goes wrong.
				tr := filepath.Join(dir, fmt.Sprintf("%s%d.trace", c.tool, run))
				rr := runEnv(t, dir, []string{"SONDE_UNWIND_TRACE=" + tr}, nil, args...)
				if rr.Code != 0 {
					t.Fatalf("sonde %v: exit %d\n%s", args, rr.Code, rr.Stderr)
				}
				out := foldedOf(t, dir, data)
				u := firstStacks(t, out, c.fn)
				t.Logf("run %d: %d units of work through %s, %d before or after main, %d wrong", run, u.work, c.fn, u.outside, u.wrong)
				if u.work < c.want || u.wrong > 0 || u.vdso*100 > u.work {
					t.Errorf("run %d: %d units of work through %s (want ≥ %d), %d wrong, %d cut at the vDSO (want ≤ 1%%):\n%s", run, u.work, c.fn, c.want, u.wrong, u.vdso, strings.Join(u.other, "\n"))
					b, _ := os.ReadFile(tr)
					t.Logf("run %d: its stderr:\n%s\nthe unwinder's trace:\n%s", run, rr.Stderr, b)
				}
			}
		})
	}
}

type firstUnits struct {
	work, outside, wrong uint64
	// vdso: stacks cut at the vDSO in the process's first moments (the
	// walker has its table with the process's entry, read after the exec;
	// the completeness line counts them).
	vdso  uint64
	other []string // the wrong stacks, heaviest first
}

// firstStacks sorts the folded stacks of first.c's process (comm first):
// work passes through chain from _start; outside is any other whole
// stack (main's own calls, the dynamic loader from its entry point, exit,
// the exec); anything else, such as a stack cut short or an unnamed
// frame, is wrong.
func firstStacks(t *testing.T, out, chain string) firstUnits {
	t.Helper()
	type kv struct {
		s string
		n uint64
	}
	var u firstUnits
	var wrong []kv
	for s, n := range foldedStacks(t, out) {
		frames := strings.Split(s, ";")
		if frames[0] != "first" {
			continue
		}
		var user []string
		for _, f := range frames[1:] {
			if !strings.HasSuffix(f, "_[k]") {
				user = append(user, f)
			}
		}
		joined := strings.Join(user, ";") + ";"
		rooted := len(user) > 0 && user[0] == "_start" && !strings.Contains(joined, "[unknown]")
		switch {
		case rooted && strings.Contains(joined, chain+";"):
			u.work += n
		case len(user) == 1 && vdsoFuncs[user[0]]:
			u.vdso += n
		case rooted || outsideMain(user) || strings.Contains(s, "sys_execve_[k]"):
			// main's own work besides the chain, the loader, exit, or the
			// exec itself (whose user registers are still the old image's)
			u.outside += n
		default:
			u.wrong += n
			wrong = append(wrong, kv{s, n})
		}
	}
	sort.Slice(wrong, func(i, j int) bool { return wrong[i].n > wrong[j].n })
	for i, r := range wrong {
		if i == 10 {
			break
		}
		u.other = append(u.other, fmt.Sprintf("%d %s", r.n, r.s))
	}
	return u
}

// vdsoFuncs are the vDSO's functions as stacks name them.
var vdsoFuncs = map[string]bool{"clock_gettime": true, "__vdso_clock_gettime": true, "gettimeofday": true, "__vdso_gettimeofday": true, "time": true, "__vdso_time": true}

// outsideMain says whether user frames (outermost first) are a whole
// stack of a process's life before main (the dynamic loader, from its own
// entry point) or after it (exit, from _start or in _exit): such a sample
// cannot reach main, and is not cut short either; or a sample in crti.o's
// _init or _fini, cut at their one frame for want of CFI.
func outsideMain(user []string) bool {
	if len(user) == 0 || strings.Contains(strings.Join(user, ";"), "[unknown]") {
		return false
	}
	switch {
	case strings.HasPrefix(user[0], "ld-linux"), user[0] == "_dl_start", user[0] == "_exit":
		return true
	case len(user) == 1 && (user[0] == "_init" || user[0] == "_fini"):
		// crti.o's _init and _fini, run by libc before main and after
		// exit, carry no CFI: a sample in them is their one frame (the
		// walk counts it incomplete; frame pointers fare no better).
		return true
	case user[0] == "_start":
		for _, f := range user {
			if f == "exit" || f == "main" {
				return f == "exit"
			}
		}
	}
	return false
}
