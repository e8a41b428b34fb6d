package why

import (
	"context"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/profile"
)

// userNames are the user frames' names of a stack, leaf first.
func userNames(fs []Frame) []string {
	var out []string
	for _, f := range fs {
		if !f.Kernel {
			out = append(out, f.Sym)
		}
	}
	return out
}

// profileTop is the user stack with the most samples of a profile (leaf
// first), and the share of split_major's samples among split_major's and
// split_minor's.
func profileTop(p *model.Profile) (top []string, major float64) {
	weights := map[string]uint64{}
	byLeaf := map[string]uint64{}
	for _, g := range p.SampleGroups() {
		var names []string
		for _, loc := range p.Stacks[g.Stack] {
			if !p.Kind(loc).IsKernel() {
				names = append(names, p.FrameName(loc))
			}
		}
		if len(names) == 0 {
			continue
		}
		weights[strings.Join(names, ";")] += g.Count
		byLeaf[names[0]] += g.Count
	}
	var best string
	for k, w := range weights {
		if best == "" || w > weights[best] {
			best = k
		}
	}
	if s := byLeaf["split_major"] + byLeaf["split_minor"]; s > 0 {
		major = float64(byLeaf["split_major"]) / float64(s)
	}
	return strings.Split(best, ";"), major
}

// whyMajor is split_major's share of the target's on-CPU time in slices
// that ended in split_major or split_minor.
func whyMajor(d *Data) float64 {
	var major, minor uint64
	for _, c := range d.CPU {
		if u := userNames(c.Frames); len(u) > 0 {
			switch u[0] {
			case "split_major":
				major += c.NS
			case "split_minor":
				minor += c.NS
			}
		}
	}
	if major+minor == 0 {
		return 0
	}
	return float64(major) / float64(major+minor)
}

// A CPU-bound program with a known answer (cpuwork split: 3/4 of its CPU
// time in split_major <- main): why's top on-CPU stack is the top stack
// of profile, run on the same process over why's window (started as the
// window opens, stopped as it closes), and each tool gives split_major
// its 3/4 within 10 points. The program has a CPU to itself (a hog has
// the other): it runs slices of up to seconds, and why samples its stacks
// within them by runtime (taken only where slices end, it once gave 0.47).
func TestCPUTopMatchesProfile(t *testing.T) {
	_, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})
	testutil.Start(t, "taskset", "-c", "1", "sh", "-c", "while :; do :; done")
	cmd := testutil.Start(t, "taskset", "-c", "0", bin, "split")
	pid := cmd.Process.Pid
	type result struct {
		r   *profile.Result
		err error
	}
	done := make(chan result, 1)
	pctx, stopProfile := context.WithCancel(context.Background())
	defer stopProfile()
	m := measureWith(t, Options{Pid: pid, Duration: 4 * time.Second,
		// The profiler loads inside why's window, so its samples cover
		// the window less that load time; the workload is steady.
		OnStart: func(uint64) {
			go func() {
				r, err := profile.Run(pctx, profile.Options{Pid: pid, Freq: 499, User: true})
				done <- result{r, err}
			}()
		},
		OnStop: func(uint64) { stopProfile() }})
	t.Logf("why's window closed; waiting for profile")
	var pr result
	select {
	case pr = <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("profile did not end within a minute of why's window closing; goroutines:\n%s", buf[:goruntime.Stack(buf, true)])
	}
	if pr.err != nil {
		t.Fatal(pr.err)
	}
	m.checkBudgets(t)
	var cpu *Finding
	for i := range m.rep.Findings {
		if m.rep.Findings[i].Kind == "cpu" {
			cpu = &m.rep.Findings[i]
			break
		}
	}
	if cpu == nil {
		t.Fatal("no CPU finding")
	}
	got := userNames(cpu.Frames)
	want, pmajor := profileTop(pr.r.Profile)
	wmajor := whyMajor(&m.res.Data)
	t.Logf("why's top CPU stack (%.1f%%): %s", 100*cpu.Share, strings.Join(got, " <- "))
	t.Logf("profile's top stack (%d samples in all): %s", pr.r.Profile.SampleCount(), strings.Join(want, " <- "))
	t.Logf("split_major's share of split_*: why %.3f, profile %.3f, by construction 0.750; %d stacks sampled inside slices", wmajor, pmajor, m.res.Errors.SliceSamples)
	// Alone on its CPU the program runs slices well over 10 ms (about
	// 240 samples in 4 s here): none means the sampling inside slices is
	// off, and the split rests on where the few slices ended.
	if m.res.Errors.SliceSamples < 10 {
		t.Errorf("%d stacks sampled inside slices of a CPU-bound program alone on its CPU for 4 s, want ≥ 10", m.res.Errors.SliceSamples)
	}
	if len(want) == 0 || want[0] != "split_major" {
		t.Errorf("profile's top stack %v: want split_major as its leaf", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("why's top CPU stack %v, profile's %v", got, want)
	}
	for tool, v := range map[string]float64{"why": wmajor, "profile": pmajor} {
		if v < 0.65 || v > 0.85 {
			t.Errorf("%s gives split_major %.3f of split_*'s time, want 0.75 within 0.1", tool, v)
		}
	}
}
