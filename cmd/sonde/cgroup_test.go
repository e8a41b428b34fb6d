package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestRecordCgroup: record -G keeps only the tasks of one cgroup (a v2
// cgroup, then one of a v1 perf_event hierarchy the test mounts), while the
// same program outside it spins beside; report --sort cgroup names it.
func TestRecordCgroup(t *testing.T) {
	dir, in, out, v2 := cgroupWorkload(t)
	name := fmt.Sprintf("/sonde-test-%d", os.Getpid())
	cgDir := makeCgroup(t, v2+name)
	check := func(label, g, join, wantCgroup string) *exec.Cmd {
		t.Helper()
		inside := startIn(t, join, in, "30s")
		testutil.Start(t, out, "30s")
		r := testutil.MustRun(t, dir, "record", "-G", g, "-o", label+".data", "-d", "1s")
		procs, _ := os.ReadFile(filepath.Join(join, "cgroup.procs"))
		t.Logf("%s: record -G %s: %s; %s holds %s", label, g, strings.TrimSpace(r.Stderr), join, strings.Fields(string(procs)))
		rep := reportJSON(t, dir, "-i", label+".data", "--sort", "comm")
		share := map[string]float64{}
		for _, e := range rep.Entries {
			share[e.Keys["comm"]] += e.SelfPct
		}
		if share["inside"] < 90 || share["outside"] > 0 || rep.Samples < 100 {
			t.Fatalf("%s: -G %s kept %d samples by comm %v, want ≥ 90%% inside and none outside", label, g, rep.Samples, share)
		}
		if wantCgroup != "" {
			cg := reportJSON(t, dir, "-i", label+".data", "--sort", "cgroup")
			if len(cg.Entries) == 0 || cg.Entries[0].Keys["cgroup"] != wantCgroup {
				t.Fatalf("%s: --sort cgroup %+v, want %s first", label, cg.Entries, wantCgroup)
			}
		}
		return inside
	}
	check("v2", name, cgDir, name)
	withV1PerfEvent(t, func(v1Dir string) *exec.Cmd { return check("v1", v1Dir, v1Dir, "") })
}

// withV1PerfEvent runs fn with a cgroup of a v1 perf_event hierarchy,
// mounted for the test where none is. The hierarchy takes the perf_event
// controller from the unified one (v2 cgroups cannot have perf events while
// it exists), and a hierarchy unmounted with a child cgroup lives on unseen:
// fn's task is killed and reaped, the cgroup removed and the hierarchy
// unmounted before the test ends, and the controller must be back on v2.
func withV1PerfEvent(t *testing.T, fn func(v1Dir string) *exec.Cmd) {
	t.Helper()
	before := v1PerfEvent() // a v1 host: the hierarchy is the host's, and stays
	mnt := t.TempDir()
	if err := syscall.Mount("none", mnt, "cgroup", 0, "perf_event"); err != nil {
		t.Fatalf("mounting a v1 perf_event hierarchy: %v", err)
	}
	v1Dir := filepath.Join(mnt, "sonde-test")
	makeCgroupNow(t, v1Dir)
	defer func() {
		var err error
		for i := 0; i < 500; i++ { // an exited task leaves its cgroup a moment later
			if err = os.Remove(v1Dir); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// A removed cgroup stays the hierarchy's child until its last
		// reference goes; unmounted with a child, the hierarchy would live on.
		for i := 0; i < 500 && perfEventCgroups() > 1; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmounting the v1 perf_event hierarchy: %v", err)
		}
		for i := 0; i < 500 && !before && v1PerfEvent(); i++ { // the hierarchy goes asynchronously
			time.Sleep(10 * time.Millisecond)
		}
		if !before && v1PerfEvent() {
			t.Errorf("perf_event is still a v1 controller after the test (cgroup %s: %v): mount -t cgroup -o perf_event none DIR, rmdir its children, umount DIR", v1Dir, err)
		}
	}()
	if cmd := fn(v1Dir); cmd != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// v1PerfEvent says whether the perf_event controller is in a v1 hierarchy
// (/proc/cgroups: its hierarchy id is not 0).
func v1PerfEvent() bool { return perfEventField(1) != 0 }

// perfEventCgroups is how many cgroups the perf_event controller has.
func perfEventCgroups() int { return perfEventField(2) }

// perfEventField is field i of perf_event's line in /proc/cgroups.
func perfEventField(i int) int {
	b, _ := os.ReadFile("/proc/cgroups")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > i && f[0] == "perf_event" {
			n, _ := strconv.Atoi(f[i])
			return n
		}
	}
	return 0
}

// cgroupWorkload builds the spinning workload twice, as "inside" and
// "outside" (their comms), and finds the cgroup v2 mount.
func cgroupWorkload(t *testing.T) (dir, in, out, v2 string) {
	t.Helper()
	testutil.Sonde(t) // built before the workload starts, not during its life
	dir, bin := testutil.Workload(t, "work", []string{"work.c"})
	in, out = filepath.Join(dir, "inside"), filepath.Join(dir, "outside")
	os.Link(bin, in)
	os.Link(bin, out)
	return dir, in, out, cgroupV2(t)
}

// cgroupV2 is where the cgroup v2 hierarchy is mounted.
func cgroupV2(t *testing.T) string {
	t.Helper()
	hs, err := cgroup.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.V2 {
			return h.Mount
		}
	}
	t.Fatal("no cgroup v2 hierarchy mounted")
	return ""
}

// makeCgroup makes a cgroup directory removed (its tasks killed) at the end.
func makeCgroup(t *testing.T, d string) string {
	t.Helper()
	makeCgroupNow(t, d)
	t.Cleanup(func() { killAll(d); os.Remove(d) })
	return d
}

func makeCgroupNow(t *testing.T, d string) {
	t.Helper()
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatalf("making cgroup %s: %v", d, err)
	}
}

// killAll kills the tasks of cgroup d and waits until it has none.
func killAll(d string) {
	for i := 0; i < 200; i++ {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond) // the kernel moves exiting tasks out
	}
}

// startIn starts bin args inside cgroup d (the shell joins it, then
// becomes bin) and returns once the process is in it.
func startIn(t *testing.T, d, bin string, args ...string) *exec.Cmd {
	t.Helper()
	script := fmt.Sprintf("echo $$ > %s/cgroup.procs && exec %s %s", d, bin, strings.Join(args, " "))
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	want := strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if strings.Contains(" "+strings.Join(strings.Fields(string(b)), " ")+" ", " "+want+" ") {
			return cmd
		}
		time.Sleep(5 * time.Millisecond) // the shell's first line
	}
	t.Fatalf("pid %s did not join %s", want, d)
	return nil
}

// TestRunqlatCgroup: runqlat -G -P keeps, in the kernel, only the
// processes of one cgroup: its spinner is there, the twin spinning outside
// (competing for the same CPUs, so both wait) is not.
func TestRunqlatCgroup(t *testing.T) {
	dir, in, out, v2 := cgroupWorkload(t)
	name := fmt.Sprintf("/sonde-rq-%d", os.Getpid())
	cgDir := makeCgroup(t, v2+name)
	startIn(t, cgDir, in, "30s")
	startIn(t, cgDir, in, "30s")
	o1 := testutil.Start(t, out, "30s")
	o2 := testutil.Start(t, out, "30s")
	r := testutil.MustRun(t, dir, "runqlat", "-G", name, "-P", "-d", "1", "--json")
	var v struct {
		Target string `json:"target"`
		Groups []struct {
			Pid   int    `json:"pid"`
			Comm  string `json:"comm"`
			Stats struct {
				Count int `json:"count"`
			} `json:"stats"`
		} `json:"groups"`
	}
	r.JSON(t, &v)
	procs, _ := os.ReadFile(filepath.Join(cgDir, "cgroup.procs"))
	inside := map[int]bool{}
	for _, f := range strings.Fields(string(procs)) {
		n, _ := strconv.Atoi(f)
		inside[n] = true
	}
	waits := 0
	for _, g := range v.Groups {
		if !inside[g.Pid] || g.Pid == o1.Process.Pid || g.Pid == o2.Process.Pid {
			t.Errorf("runqlat -G %s shows pid %d (%s), not in the cgroup %v", name, g.Pid, g.Comm, inside)
		}
		waits += g.Stats.Count
	}
	if waits == 0 || v.Target != "cgroup "+name {
		t.Fatalf("runqlat -G %s: %d waits, target %q:\n%s", name, waits, v.Target, r.Stdout)
	}
}

// TestOffcpuCgroup: offcpu -G counts only the blocks of one cgroup's
// tasks: a ticker inside blocks about 1 s in a 1 s run, its twin outside
// blocks as much and is not counted.
func TestOffcpuCgroup(t *testing.T) {
	_, _, _, v2 := cgroupWorkload(t)
	dir, bin := testutil.Workload(t, "ticker", []string{"ticker.c"})
	in, out := filepath.Join(dir, "tickin"), filepath.Join(dir, "tickout")
	os.Link(bin, in)
	os.Link(bin, out)
	name := fmt.Sprintf("/sonde-off-%d", os.Getpid())
	cgDir := makeCgroup(t, v2+name)
	startIn(t, cgDir, in)
	testutil.Start(t, out)
	by := stacksByComm(t, testutil.MustRun(t, dir, "offcpu", "-G", name, "-d", "1", "--json"), "blocked_ns")
	if by["tickout"] > 0 || by["tickin"] < 500_000_000 || len(by) != 1 {
		t.Fatalf("offcpu -G %s: blocked ns by comm %v, want about 1 s of tickin and nothing else", name, by)
	}
}

// stacksByComm sums a stack tool's --json output (offcpu's blocked_ns,
// memleak's bytes: the key) by the stacks' comm.
func stacksByComm(t *testing.T, r testutil.Result, key string) map[string]uint64 {
	t.Helper()
	var v struct {
		Stacks []map[string]json.RawMessage `json:"stacks"`
	}
	r.JSON(t, &v)
	by := map[string]uint64{}
	for _, s := range v.Stacks {
		var comm string
		var n uint64
		if err := json.Unmarshal(s["comm"], &comm); err != nil {
			t.Fatalf("sonde %s: a stack's comm: %v", strings.Join(r.Args, " "), err)
		}
		if err := json.Unmarshal(s[key], &n); err != nil {
			t.Fatalf("sonde %s: a stack's %s: %v", strings.Join(r.Args, " "), key, err)
		}
		by[comm] += n
	}
	return by
}

// TestCgroupEveryTool: -G keeps, in the kernel, only one cgroup's tasks in
// profile, stat, filetop, biolat, memleak --kernel and why. Inside the cgroup a
// spinner, a disk reader (O_DIRECT) and a shell copying files; outside,
// twins of each. Each tool's numbers are checked against what only the
// inside tasks did (their schedstat, their read calls) and none of the
// outside tasks' names may appear.
func TestCgroupEveryTool(t *testing.T) {
	c := startCgroupTwins(t)
	t.Run("profile", c.profile)
	t.Run("stat", c.stat)
	t.Run("filetop", c.filetop)
	t.Run("biolat", c.biolat)
	t.Run("memleak", c.memleak)
	t.Run("why", c.why)
	t.Run("user memleak refused", func(t *testing.T) {
		r := testutil.Run(t, c.dir, "memleak", "-G", c.name, "-p", strconv.Itoa(c.spinIn.Process.Pid), "-d", "1")
		if r.Code == 0 || !strings.Contains(r.Stderr, "-G/--cgroup goes with --kernel") {
			t.Errorf("memleak -G -p: exit %d, %q", r.Code, r.Stderr)
		}
	})
}

// cgroupTwins: the same work inside a cgroup (name, a path in the v2
// hierarchy) and outside it.
type cgroupTwins struct {
	dir, name, cgDir        string
	spinIn, readIn, readOut *exec.Cmd
}

func startCgroupTwins(t *testing.T) *cgroupTwins {
	dir, in, out, v2 := cgroupWorkload(t)
	_, reader := testutil.Workload(t, "diskread", []string{"diskread.c"})
	diskIn, diskOut := filepath.Join(dir, "diskin"), filepath.Join(dir, "diskout")
	os.Link(reader, diskIn)
	os.Link(reader, diskOut)
	src := filepath.Join(dir, "src.dat")
	if err := os.WriteFile(src, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	copier := func(name, tool string) string {
		p := filepath.Join(dir, name)
		loop := fmt.Sprintf("#!/bin/sh\ni=0\nwhile :; do i=$(((i+1)%%16)); %s; done\n", fmt.Sprintf(tool, src, filepath.Join(dir, name+".$i")))
		if err := os.WriteFile(p, []byte(loop), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := &cgroupTwins{dir: dir, name: fmt.Sprintf("/sonde-every-%d", os.Getpid())}
	cgDir := makeCgroup(t, v2+c.name)
	c.cgDir = cgDir
	c.spinIn = startIn(t, cgDir, in, "60s")
	c.readIn = startIn(t, cgDir, diskIn, filepath.Join(dir, "in.dat"))
	startIn(t, cgDir, copier("copyin", "cp %s %s"))
	testutil.Start(t, out, "60s")
	c.readOut = testutil.Start(t, diskOut, filepath.Join(dir, "out.dat"))
	testutil.Start(t, copier("copyout", "dd if=%s of=%s status=none"))
	for _, f := range []string{"in.dat", "out.dat"} {
		// The readers write their 32 MiB file before they read.
		p := filepath.Join(dir, f)
		testutil.WaitFor(t, 10*time.Second, p+" at 32 MiB", func() bool {
			st, err := os.Stat(p)
			return err == nil && st.Size() >= 32<<20
		})
	}
	return c
}

// cgroupInside: the comms of the inside tasks (the copier's children
// are cp).
var cgroupInside = map[string]bool{"inside": true, "diskin": true, "cp": true, "copyin": true}

func (c *cgroupTwins) profile(t *testing.T) {
	r := testutil.MustRun(t, c.dir, "profile", "-G", c.name, "-F", "199", "-d", "1", "--json")
	var v struct {
		Entries []struct {
			Keys struct {
				Comm string `json:"comm"`
			} `json:"keys"`
			Samples int `json:"samples"`
		} `json:"entries"`
	}
	r.JSON(t, &v)
	by := map[string]int{}
	for _, e := range v.Entries {
		by[e.Keys.Comm] += e.Samples
	}
	for comm := range by {
		if !cgroupInside[comm] {
			t.Errorf("profile -G %s sampled %s (outside the cgroup): %v", c.name, comm, by)
		}
	}
	if by["inside"] < 50 {
		t.Errorf("profile -G %s: %d samples of the spinner inside, want ≥ 50 (half a CPU at 199 Hz for 1 s): %v", c.name, by["inside"], by)
	}
}

func (c *cgroupTwins) stat(t *testing.T) {
	// The kernel's own account of the cgroup's CPU time (cpu.stat, in
	// every v2 cgroup), read around the run.
	usage := func() float64 {
		// A running task's CPU time reaches cpu.stat at its next tick or
		// switch; reading its schedstat charges it now (task-clock came
		// out 2% above cpu.stat's growth once, a tick per CPU behind).
		if b, err := os.ReadFile(filepath.Join(c.cgDir, "cgroup.threads")); err == nil {
			for _, tid := range strings.Fields(string(b)) {
				os.ReadFile("/proc/" + tid + "/schedstat")
			}
		}
		b, err := os.ReadFile(filepath.Join(c.cgDir, "cpu.stat"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n * 1000
			}
		}
		t.Fatalf("no usage_usec in %s/cpu.stat", c.cgDir)
		return 0
	}
	before, hidden0 := usage(), hiddenNS(t)
	r := testutil.MustRun(t, c.dir, "stat", "-G", c.name, "-e", "task-clock", "-d", "1", "--json", "-o", "-")
	spent, hidden := usage()-before, hiddenNS(t)-hidden0
	var v struct {
		Counts []struct {
			Event string  `json:"event"`
			Value float64 `json:"value"`
		} `json:"counts"`
	}
	r.JSON(t, &v)
	if len(v.Counts) != 1 {
		t.Fatalf("stat -G: %s", r.Stdout)
	}
	got := v.Counts[0].Value
	t.Logf("stat -G %s: task-clock %.0f ns; the cgroup's cpu.stat grew %.0f ns around it, the machine's irq, softirq and steal time %.0f ns", c.name, got, spent, hidden)
	// task-clock is the time the cgroup's tasks were on a CPU, interrupts
	// and time the hypervisor stole included; cpu.stat leaves those out.
	if got < 0.6*spent || got > 1.01*spent+hidden {
		t.Errorf("stat -G %s: task-clock %.0f ns, want at most the %.0f ns the cgroup's cpu.stat grew around it (+%.0f ns of irq and steal) and at least 60%% of it (unfiltered, the outside twins double it)", c.name, got, spent, hidden)
	}
}

// hiddenNS is the machine's time in interrupts and stolen by the
// hypervisor so far (/proc/stat, every CPU), in ns.
func hiddenNS(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	// cpu  user nice system idle iowait irq softirq steal …, in USER_HZ (100).
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	var ticks float64
	for _, i := range []int{6, 7, 8} {
		if i < len(f) {
			v, _ := strconv.ParseFloat(f[i], 64)
			ticks += v
		}
	}
	return ticks * 1e7
}

func (c *cgroupTwins) filetop(t *testing.T) {
	r := testutil.MustRun(t, c.dir, "filetop", "-G", c.name, "-a", "-d", "1", "--json")
	if !strings.Contains(r.Stdout, "in.dat") && !strings.Contains(r.Stdout, "copyin.") {
		t.Errorf("filetop -G %s: no file of the inside tasks:\n%s", c.name, r.Stdout)
	}
	for _, f := range []string{"out.dat", "copyout."} {
		if strings.Contains(r.Stdout, f) {
			t.Errorf("filetop -G %s shows %s, a file of the outside tasks:\n%s", c.name, f, r.Stdout)
		}
	}
}

// syscr is how many read calls process pid made (/proc/PID/io).
func syscr(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no syscr in /proc/%d/io", pid)
	return 0
}

func (c *cgroupTwins) biolat(t *testing.T) {
	in0, out0 := syscr(t, c.readIn.Process.Pid), syscr(t, c.readOut.Process.Pid)
	r := testutil.MustRun(t, c.dir, "biolat", "-G", c.name, "-d", "1", "--json")
	inN, outN := syscr(t, c.readIn.Process.Pid)-in0, syscr(t, c.readOut.Process.Pid)-out0
	var v struct {
		Stages []struct {
			Stats struct {
				Count int `json:"count"`
			} `json:"stats"`
		} `json:"stages"`
	}
	r.JSON(t, &v)
	if len(v.Stages) != 1 {
		t.Fatalf("biolat: %s", r.Stdout)
	}
	n := v.Stages[0].Stats.Count
	t.Logf("biolat -G %s: %d requests; around it the reader inside read %d blocks, the one outside %d", c.name, n, inN, outN)
	// The copier inside adds writeback of its own only through the
	// kernel's flusher threads, which are not in the cgroup.
	if n < inN/4 || n > inN+inN/10+50 {
		t.Errorf("biolat -G %s: %d requests, want about the %d reads of the reader inside (not its twin's %d too)", c.name, n, inN, outN)
	}
}

func (c *cgroupTwins) memleak(t *testing.T) {
	by := stacksByComm(t, testutil.MustRun(t, c.dir, "memleak", "--kernel", "-G", c.name, "-d", "1", "--json"), "bytes")
	// The copiers' children are gone when names are read ("?"); the
	// shells that fork them live on and allocate in the kernel too.
	for _, comm := range []string{"outside", "diskout", "dd", "copyout"} {
		if by[comm] > 0 {
			t.Errorf("memleak --kernel -G %s: %d bytes of %s (outside the cgroup): %v", c.name, by[comm], comm, by)
		}
	}
	if by["copyin"] == 0 {
		t.Errorf("memleak --kernel -G %s: nothing outstanding of the copier's shell inside: %v", c.name, by)
	}
}

func (c *cgroupTwins) why(t *testing.T) {
	r := testutil.MustRun(t, c.dir, "why", "-G", c.name, "-d", "1", "--json")
	var v struct {
		Threads []struct {
			TID         int    `json:"tid"`
			Comm        string `json:"comm"`
			WallNS      uint64 `json:"wall_ns"`
			OnCPUNS     uint64 `json:"on_cpu_ns"`
			IRQNS       uint64 `json:"irq_ns"`
			RunnableNS  uint64 `json:"runnable_ns"`
			ThrottledNS uint64 `json:"throttled_ns"`
		} `json:"threads"`
	}
	r.JSON(t, &v)
	var spun, wanting, wall uint64
	for _, th := range v.Threads {
		if !cgroupInside[th.Comm] {
			t.Errorf("why -G %s explains %s (%d), outside the cgroup", c.name, th.Comm, th.TID)
		}
		if th.TID == c.spinIn.Process.Pid {
			spun, wall = th.OnCPUNS, th.WallNS
			wanting = th.OnCPUNS + th.IRQNS + th.RunnableNS + th.ThrottledNS
		}
	}
	// The spinner never blocks: its whole window is on a CPU or waiting
	// for one (how much of each depends on what else runs: its twin, the
	// readers and the copiers share the two CPUs; 0.24 s of 1 s once).
	if spun == 0 || wall < 900_000_000 || wanting < wall*95/100 {
		t.Errorf("why -G %s: the spinner inside ran %d ns and wanted a CPU %d ns of its %d ns: %s", c.name, spun, wanting, wall, r.Stdout)
	}
}
