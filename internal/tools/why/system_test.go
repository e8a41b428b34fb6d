package why

import (
	"strings"
	"testing"
)

// slicesOf: a thread seen first a second after the start (its state
// until then settled at that event) has that time moved back to the
// slices it was short in; every slice adds up to its length, every state
// to the budget.
func TestSlicesOf(t *testing.T) {
	edges := []uint64{0, 100, 200, 300, 400}
	// Blocked, unseen, until 150; then on CPU 50, runnable 50, blocked 100.
	cum := [][tlStates]uint64{{}, {}, {50, 0, 0, 150}, {50, 50, 0, 200}, {50, 50, 0, 300}}
	got := slicesOf(edges, cum, 0, 400)
	want := [][tlStates]uint64{{0, 0, 0, 100}, {50, 0, 0, 50}, {0, 50, 0, 50}, {0, 0, 0, 100}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slice %d: %v, want %v", i, got[i], want[i])
		}
	}
	// A thread born at 150 and dead at 250: only what it lived.
	cum = [][tlStates]uint64{{}, {}, {20, 30, 0, 0}, {20, 30, 0, 50}, {20, 30, 0, 50}}
	got = slicesOf(edges, cum, 150, 250)
	sums := []uint64{0, 50, 50, 0}
	for i, v := range got {
		if s := v[0] + v[1] + v[2] + v[3]; s != sums[i] {
			t.Errorf("slice %d of a short life: %v adds up to %d, want %d", i, v, s, sums[i])
		}
	}
	// Negative differences (time settled as another state later) clamp;
	// what was short is given to the largest state.
	cum = [][tlStates]uint64{{}, {100, 0, 0, 0}, {80, 0, 0, 0}, {80, 0, 0, 220}, {80, 0, 0, 320}}
	got = slicesOf(edges, cum, 0, 400)
	for i, v := range got {
		if s := v[0] + v[1] + v[2] + v[3]; s != 100 {
			t.Errorf("slice %d: %v adds up to %d", i, v, s)
		}
	}
}

// System-wide: processes are summed from their threads, the busiest first,
// named by their main thread; the text shows the top ones' threads only.
func TestProcesses(t *testing.T) {
	d := &Data{System: true}
	add := func(pid, tid int, comm string, on, blocked uint64) {
		th := Thread{WallNS: on + blocked, OnCPUNS: on, BlockedNS: blocked}
		th.PID, th.TID, th.Comm = pid, tid, comm
		d.Threads = append(d.Threads, th)
	}
	add(10, 10, "idle", 0, 100)
	add(10, 11, "idle2", 0, 100)
	add(20, 21, "hogthread", 90, 10)
	add(20, 20, "hog", 50, 50)
	add(30, 30, "small", 10, 90)
	d.CPU = []CPU{{Pid: 20, Tid: 21, Comm: "hogthread", NS: 90, Frames: ufr("/x", "spin")}}
	r := Analyze(d, 2)
	if len(r.Processes) != 3 {
		t.Fatalf("processes %+v", r.Processes)
	}
	p := r.Processes[0]
	if p.PID != 20 || p.Comm != "hog" || p.Threads != 2 || p.WallNS != 200 || p.OnCPUNS != 140 {
		t.Errorf("top process %+v", p)
	}
	if r.Processes[1].PID != 30 || r.Processes[2].PID != 10 {
		t.Errorf("order %d, %d: want 30, then 10", r.Processes[1].PID, r.Processes[2].PID)
	}
	if r.Budget.WallNS != 500 || r.Findings[0].Share != 90.0/500 {
		t.Errorf("budget %d, finding 1 %+v", r.Budget.WallNS, r.Findings[0])
	}
	var b strings.Builder
	r.WriteText(&b)
	text := b.String()
	t.Log("\n" + text)
	for _, want := range []string{"Processes, by time on", "all threads' time", "(1 more in --json)", "(2 threads of the other processes in --json)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(text, "idle2") {
		t.Errorf("text shows a thread of a process past --top")
	}
}

// A finding's flame graph holds all of its stacks, under the threads'
// names, and adds up to its time.
func TestFindingFolded(t *testing.T) {
	libc := "/usr/lib/libc.so.6"
	d := &Data{Threads: []Thread{{WallNS: 100, BlockedNS: 100}, {WallNS: 100, BlockedNS: 90, RunnableNS: 10}}}
	d.Threads[0].TID, d.Threads[0].Comm = 7, "w"
	d.Threads[1].TID, d.Threads[1].Comm = 8, "w"
	d.Waits = []Wait{
		{Tid: 7, Comm: "w", NS: 100, Syscall: "poll", Frames: append(kframes("do_sys_poll"), append(ufr(libc, "poll"), ufr("/x", "ask", "main")...)...)},
		{Tid: 8, Comm: "w", NS: 90, Syscall: "poll", Frames: append(kframes("do_sys_poll"), append(ufr(libc, "poll"), ufr("/x", "ask", "loop", "main")...)...)},
	}
	r := Analyze(d, 5)
	if r.Findings[0].Kind != ReasonNet || r.Findings[1].Kind != "runqueue" {
		t.Fatalf("findings %+v", r.Findings)
	}
	var b strings.Builder
	if err := r.WriteFindingFolded(&b, 0); err != nil {
		t.Fatal(err)
	}
	want := "w;main;ask;poll;do_sys_poll_[k] 100\nw;main;loop;ask;poll;do_sys_poll_[k] 90\n"
	if b.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	r.WriteFindingFolded(&b, 1)
	if b.String() != "w 10\n" {
		t.Errorf("runqueue folded %q", b.String())
	}
}

// The timeline keeps the target threads of the shown processes.
func TestTimelineShown(t *testing.T) {
	d := &Data{System: true, StartNS: 1000, StopNS: 1200}
	for i, pid := range []int{1, 2, 3} {
		th := Thread{WallNS: 200, OnCPUNS: uint64(100 - 10*i), BlockedNS: uint64(100 + 10*i), beginNS: 1000, endNS: 1200}
		th.PID, th.TID, th.Comm = pid, pid, "t"
		d.Threads = append(d.Threads, th)
	}
	d.Timeline = buildTimeline(d, []sample{{t: 1100, cum: map[uint32][tlStates]uint64{1: {50, 0, 0, 50}, 2: {45, 0, 0, 55}}}})
	r := Analyze(d, 2)
	tl := r.Timeline
	if len(tl.EdgesNS) != 3 || tl.EdgesNS[1] != 100 || tl.EdgesNS[2] != 200 {
		t.Fatalf("edges %v", tl.EdgesNS)
	}
	if len(tl.Threads) != 2 || tl.Threads[0].TID != 1 || tl.Threads[1].TID != 2 {
		t.Fatalf("threads %+v", tl.Threads)
	}
	if got := tl.Threads[0].OnCPUNS; got[0] != 50 || got[1] != 50 {
		t.Errorf("tid 1 on CPU %v", got)
	}
}
