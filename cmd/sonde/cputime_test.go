package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/testutil"
)

type schedPoint struct{ at, ns uint64 }

// schedstatSampler records /proc/PID/schedstat's first field (ns on CPU)
// with CLOCK_MONOTONIC timestamps, the clock sonde's intervals use.
func schedstatSampler(pid int, stop chan struct{}, wg *sync.WaitGroup) *[]schedPoint {
	pts := &[]schedPoint{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			v, err := procfs.OnCPU(pid, 0)
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			if err == nil {
				*pts = append(*pts, schedPoint{uint64(ts.Nano()), uint64(v)})
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return pts
}

// at interpolates the schedstat series at a monotonic time.
func at(pts []schedPoint, t uint64) float64 {
	for i := 1; i < len(pts); i++ {
		if pts[i].at >= t {
			a, b := pts[i-1], pts[i]
			if b.at == a.at {
				return float64(b.ns)
			}
			f := float64(t-a.at) / float64(b.at-a.at)
			return float64(a.ns) + f*float64(b.ns-a.ns)
		}
	}
	return math.NaN()
}

func TestCputimeAgainstSchedstat(t *testing.T) {
	dir, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})
	pids := map[string]int{}
	for _, mode := range []string{"hog", "alt", "instep"} {
		c := testutil.Start(t, bin, mode)
		pids[mode] = c.Process.Pid
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	series := map[string]*[]schedPoint{}
	for mode, pid := range pids {
		series[mode] = schedstatSampler(pid, stop, &wg)
	}
	// No wait: the samplers read schedstat every 2 ms from now, long
	// before cputime's first interval starts (after its programs load).
	r := testutil.MustRun(t, dir, "cputime", "-i", "1s", "-n", "5", "--top", "50", "--json", "--compare-sampled", "-F", "100")
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	type line struct {
		Start  uint64 `json:"start_ns"`
		End    uint64 `json:"end_ns"`
		Unseen uint64 `json:"unseen_switches"`
		Tasks  []struct {
			Tid     int     `json:"tid"`
			NS      uint64  `json:"cpu_ns"`
			Sampled *uint64 `json:"sampled_ns"`
		} `json:"tasks"`
	}
	exact := map[string]float64{}
	sampled := map[string]float64{}
	ref := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	n := 0
	var unseen uint64
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		n++
		unseen += l.Unseen
		for mode, pid := range pids {
			d := at(*series[mode], l.End) - at(*series[mode], l.Start)
			ref[mode] += d
			for _, tk := range l.Tasks {
				if tk.Tid == pid {
					exact[mode] += float64(tk.NS)
					if tk.Sampled != nil {
						sampled[mode] += float64(*tk.Sampled)
					}
				}
			}
		}
	}
	if n != 5 {
		t.Fatalf("%d reports, want 5", n)
	}
	for _, mode := range []string{"hog", "alt", "instep"} {
		e, s, rf := exact[mode], sampled[mode], ref[mode]
		t.Logf("%-6s exact %8.1f ms  schedstat %8.1f ms  sampled %8.1f ms (error %+.0f%%)", mode, e/1e6, rf/1e6, s/1e6, 100*(s-rf)/rf)
		// A switch the kernel never reported to the program (this 6.18
		// kernel's quirk, counted in the header) can cost a slice of a
		// thread that had not been accounted yet; the report says so.
		limit := 0.01
		if unseen > 0 {
			limit = 0.1
		}
		if math.IsNaN(rf) || rf == 0 || math.Abs(e-rf)/rf > limit {
			t.Errorf("%s: exact %.1f ms vs schedstat %.1f ms: more than %.0f%% apart (%d switches unseen)", mode, e/1e6, rf/1e6, 100*limit, unseen)
		}
	}
	// The sampled estimate of the in-step task is far off; sonde shows it.
	if s, rf := sampled["instep"], ref["instep"]; math.Abs(s-rf)/rf < 0.25 {
		t.Logf("in-step task sampled within 25%% this time (phase luck): %.1f vs %.1f ms", s/1e6, rf/1e6)
	}
	txt := testutil.MustRun(t, dir, "cputime", "-i", "500ms", "-n", "1", "-p", strconv.Itoa(pids["instep"]), "--compare-sampled")
	if !strings.Contains(txt.Stdout, "SAMPLED-MS") || !strings.Contains(txt.Stdout, "cpuwork") || !strings.Contains(txt.Stdout, "%") {
		t.Errorf("--compare-sampled text lacks the comparison:\n%s", txt.Stdout)
	}
}

func TestCputimeStream(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	port := freePort(t, "udp")
	// sonde listen receives and tags by sender.
	lc := exec.Command(testutil.Sonde(t), "listen", fmt.Sprintf("udp://127.0.0.1:%d", port))
	var lout testutil.SyncBuffer
	lc.Stdout = &lout
	ready := testutil.NotifyReady(t, lc)
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	ready.Wait(t)
	testutil.MustRun(t, dir, "cputime", "-i", "300ms", "-n", "2", "--stream", fmt.Sprintf("udp://127.0.0.1:%d", port))
	// Datagrams sent are on the loopback already; listen prints them soon.
	for deadline := time.Now().Add(10 * time.Second); strings.Count(lout.String(), "sonde cputime") < 2 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	lc.Process.Signal(os.Interrupt)
	lc.Wait()
	if got := lout.String(); strings.Count(got, "sonde cputime") < 2 || !strings.Contains(got, "[127.0.0.1:") {
		t.Errorf("listen got:\n%s", got)
	}
	// Plain nc reads the text stream too.
	nc, err := exec.LookPath("nc")
	if err != nil {
		if os.Getenv("SONDE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatalf("nc not found: install netcat-openbsd")
		}
		t.Skip("nc not found")
	}
	port2 := freePort(t, "udp")
	ncCmd := exec.Command(nc, "-lu", "127.0.0.1", strconv.Itoa(port2))
	var nout testutil.SyncBuffer
	ncCmd.Stdout = &nout
	if err := ncCmd.Start(); err != nil {
		t.Fatal(err)
	}
	// nc's ready signal: its socket is bound (the kernel's UDP table).
	bound := fmt.Sprintf("0100007F:%04X ", port2)
	testutil.WaitFor(t, 10*time.Second, "nc -lu to bind", func() bool {
		b, _ := os.ReadFile("/proc/net/udp")
		return strings.Contains(string(b), bound)
	})
	testutil.MustRun(t, dir, "cputime", "-i", "300ms", "-n", "2", "--stream", fmt.Sprintf("udp://127.0.0.1:%d", port2))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(nout.String(), "COMM") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	ncCmd.Process.Kill()
	ncCmd.Wait()
	if !strings.Contains(nout.String(), "sonde cputime") || !strings.Contains(nout.String(), "COMM") {
		t.Errorf("nc -lu got:\n%s", nout.String())
	}
}

func TestTopBatch(t *testing.T) {
	dir, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})
	hog := exec.Command(bin, "hog")
	hog.Start()
	defer func() { hog.Process.Kill(); hog.Wait() }()
	r := testutil.MustRun(t, dir, "top", "-b", "3", "-i", "500ms", "--rows", "5")
	if n := strings.Count(r.Stdout, "sonde top "); n != 3 {
		t.Errorf("%d frames, want 3:\n%s", n, r.Stdout)
	}
	if !strings.Contains(r.Stdout, "cpuwork") || !strings.Contains(r.Stdout, "Hot symbols") || !strings.Contains(r.Stdout, "[.] main") {
		t.Errorf("frames lack the hog:\n%s", r.Stdout)
	}
}

// TestTopScreen drives the full-screen view in tmux: it renders, 's'
// changes the sort, 'f' filters, 'q' quits.
func TestTopScreen(t *testing.T) {
	tmux := testutil.RequireTool(t, "tmux", "tmux")
	_, bin := testutil.Workload(t, "cpuwork", []string{"cpuwork.c"})
	hog := exec.Command(bin, "hog")
	hog.Start()
	defer func() { hog.Process.Kill(); hog.Wait() }()
	session := fmt.Sprintf("sondetop%d", os.Getpid())
	run := func(args ...string) string {
		out, _ := exec.Command(tmux, args...).CombinedOutput()
		return string(out)
	}
	if out, err := exec.Command(tmux, "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
		testutil.Sonde(t)+" top -i 300ms --rows 8").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer run("kill-session", "-t", session)
	capture := func() string { return run("capture-pane", "-p", "-t", session) }
	waitFor := func(what string, ok func(string) bool) string {
		deadline := time.Now().Add(8 * time.Second)
		var s string
		for time.Now().Before(deadline) {
			s = capture()
			if ok(s) {
				return s
			}
			time.Sleep(150 * time.Millisecond)
		}
		t.Fatalf("screen never showed %s:\n%s", what, s)
		return s
	}
	waitFor("tasks with the hog", func(s string) bool {
		return strings.Contains(s, "sort: cpu") && strings.Contains(s, "cpuwork") && strings.Contains(s, "Hot symbols")
	})
	run("send-keys", "-t", session, "s")
	s := waitFor("sort by pid", func(s string) bool { return strings.Contains(s, "sort: pid") })
	// Sorted by pid: the task rows' pids ascend.
	var pids []int
	inTasks := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "Tasks") {
			inTasks = true
			continue
		}
		f := strings.Fields(l)
		if inTasks && len(f) >= 5 {
			if p, err := strconv.Atoi(f[0]); err == nil {
				pids = append(pids, p)
			}
		}
	}
	for i := 1; i < len(pids); i++ {
		if pids[i] < pids[i-1] {
			t.Errorf("tasks not sorted by pid: %v", pids)
			break
		}
	}
	run("send-keys", "-t", session, "f")
	run("send-keys", "-t", session, "cpuwork", "Enter")
	waitFor("the filter", func(s string) bool { return strings.Contains(s, "filter: cpuwork") })
	run("send-keys", "-t", session, "q")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if out := run("has-session", "-t", session); strings.Contains(out, "can't find") || strings.Contains(out, "no server") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("sonde top did not quit on q:\n%s", capture())
}
