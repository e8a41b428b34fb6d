package why

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
)

// The Go counters name members of the C enum (no root: the object's BTF).
func TestCounterTags(t *testing.T) {
	if err := bpfskel.CheckCounters(loadWhy, whyMapErrors, &Errors{}); err != nil {
		t.Fatal(err)
	}
}

// The Go copies of the program's enums match the object's BTF.
func TestEnumsMatchObject(t *testing.T) {
	spec, err := loadWhy()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]uint64{
		"why_state": {"WHY_UNSEEN": whyUnseen, "WHY_ON": whyOn, "WHY_RUNQ": whyRunq, "WHY_BLOCKED": whyBlocked, "WHY_DEAD": whyDead},
		"why_ctl":   {"WHY_CTL_START": whyCtlStart, "WHY_CTL_STOP": whyCtlStop},
	} {
		got, err := bpfskel.Enum(spec, name)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s = %d in the object, %d in Go", name, k, got[k], v)
			}
		}
	}
}

func kframes(names ...string) []Frame {
	var out []Frame
	for _, n := range names {
		out = append(out, Frame{Sym: n, DSO: "[kernel.kallsyms]", Kernel: true})
	}
	return out
}

func ufr(dso string, names ...string) []Frame {
	var out []Frame
	for _, n := range names {
		out = append(out, Frame{Sym: n, DSO: dso})
	}
	return out
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name    string
		frames  []Frame
		syscall string
		want    string
	}{
		{"poll", kframes("__schedule", "schedule", "schedule_hrtimeout_range", "do_poll", "do_sys_poll", "__x64_sys_poll"), "poll", ReasonNet},
		{"nanosleep", kframes("__schedule", "schedule", "do_nanosleep", "hrtimer_nanosleep"), "clock_nanosleep", ReasonSleep},
		{"futex", kframes("__schedule", "schedule", "futex_wait_queue", "__futex_wait"), "futex", ReasonLock},
		{"odirect", kframes("__schedule", "schedule", "io_schedule", "__blkdev_direct_IO_simple"), "pread64", ReasonDisk},
		{"fault_reads_disk", kframes("__schedule", "io_schedule", "folio_wait_bit_common", "filemap_fault", "handle_mm_fault", "exc_page_fault"), "", ReasonFault},
		{"pipe", kframes("__schedule", "schedule", "pipe_read", "vfs_read"), "read", ReasonPipe},
		{"syscall_only", nil, "futex", ReasonLock},
		{"nothing", kframes("__schedule", "schedule"), "wait4", ReasonOther},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Classify(c.frames, c.syscall); got != c.want {
				t.Errorf("Classify = %q, want %q", got, c.want)
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	timer := kframes("try_to_wake_up", "hrtimer_wakeup", "__hrtimer_run_queues", "hrtimer_interrupt", "__sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt")
	if got := Interrupt(timer); got != "timer" {
		t.Errorf("timer wake: %q", got)
	}
	// Loopback delivery runs the softirq from the sender's local_bh_enable:
	// the sender is the waker.
	loop := append(kframes("try_to_wake_up", "sock_def_readable", "udp_queue_rcv_skb", "net_rx_action", "handle_softirqs", "do_softirq", "__local_bh_enable_ip", "__dev_queue_xmit", "udp_sendmsg", "__sys_sendto"), ufr("/usr/lib/libc.so.6", "sendto")...)
	if got := Interrupt(loop); got != "" {
		t.Errorf("loopback send: %q, want no interrupt", got)
	}
}

func TestAnchor(t *testing.T) {
	fs := append(kframes("__schedule"), ufr("/usr/lib/x86_64-linux-gnu/libc.so.6", "__poll", "poll")...)
	fs = append(fs, ufr("/tmp/whyserver", "resolve_peer", "handle_request", "worker")...)
	if got := Anchor(fs, "poll"); got != "resolve_peer" {
		t.Errorf("Anchor = %q", got)
	}
	if got := leafUser(fs); got != "__poll" {
		t.Errorf("leafUser = %q", got)
	}
}

// A synthetic seed-004 run: four workers wait in poll, woken by the
// responder's sendto; the responder had slept in usleep, woken by a timer.
func TestAnalyzeChain(t *testing.T) {
	const sec = 1_000_000_000
	libc := "/usr/lib/libc.so.6"
	poll := append(kframes("__schedule", "do_sys_poll"), append(ufr(libc, "__poll"), ufr("/w", "resolve_peer", "worker")...)...)
	send := append(kframes("try_to_wake_up", "sock_def_readable", "__sys_sendto"), append(ufr(libc, "sendto"), ufr("/w", "answer_query", "responder")...)...)
	sleep := append(kframes("__schedule", "do_nanosleep"), append(ufr(libc, "clock_nanosleep", "usleep"), ufr("/w", "answer_query", "responder")...)...)
	timer := kframes("try_to_wake_up", "hrtimer_wakeup", "asm_sysvec_apic_timer_interrupt")
	d := &Data{}
	for tid := 11; tid <= 14; tid++ {
		d.Threads = append(d.Threads, Thread{WallNS: sec, BlockedNS: sec * 9 / 10, OnCPUNS: sec / 10})
		d.Threads[len(d.Threads)-1].TID, d.Threads[len(d.Threads)-1].Comm = tid, "worker"
		d.Waits = append(d.Waits, Wait{Tid: tid, Comm: "worker", Frames: poll, Syscall: "poll", NS: sec * 9 / 10, Count: 10,
			WakerTid: 20, WakerPid: 10, WakerComm: "responder", WakerFrames: send, WakerLast: sleep, WakerLastSyscall: "clock_nanosleep",
			WakerLastKnown: true, WakerRanNS: 1000, WakerLastNS: 200_000_000, stack: "poll", wakerLast: "sleep"})
	}
	d.Threads = append(d.Threads, Thread{WallNS: sec, BlockedNS: sec})
	d.Threads[4].TID, d.Threads[4].Comm = 20, "responder"
	d.Waits = append(d.Waits, Wait{Tid: 20, Comm: "responder", Frames: sleep, Syscall: "clock_nanosleep", NS: sec, Count: 40,
		WakerTid: 3, WakerPid: 3, WakerComm: "other", WakerFrames: timer, stack: "sleep"})
	r := Analyze(d, 10)
	f := r.Findings[0]
	if f.Kind != ReasonNet || f.Function != "resolve_peer" || len(f.Threads) != 4 {
		t.Fatalf("finding 1: %+v", f)
	}
	if want := 3.6 / 5; f.Share < want-1e-9 || f.Share > want+1e-9 {
		t.Errorf("share %v, want %v", f.Share, want)
	}
	if len(f.Chain) != 1 || f.Chain[0].Comm != "responder" || f.Chain[0].Reason != ReasonSleep || f.Root != "sleep" {
		t.Errorf("chain %+v root %q", f.Chain, f.Root)
	}
	if !strings.Contains(f.Text, "under resolve_peer") || !strings.Contains(f.Text, "responder (tid 20)") {
		t.Errorf("text: %s", f.Text)
	}
}

func TestCgroupFiles(t *testing.T) {
	v1 := parseCPUStat(strings.NewReader("nr_periods 50\nnr_throttled 40\nthrottled_time 3200000000\nnr_bursts 0\n"))
	v2 := parseCPUStat(strings.NewReader("usage_usec 10\nnr_periods 50\nnr_throttled 40\nthrottled_usec 3200000\n"))
	if v1 != (cpuStat{50, 40, 3200000000}) || v2 != v1 {
		t.Errorf("cpu.stat: v1 %+v, v2 %+v", v1, v2)
	}
}

// The JSON has what scripts read: findings by share, each with kind,
// share, frames and a chain whose links have comm, tid and frames.
func TestJSONShape(t *testing.T) {
	d := &Data{Threads: []Thread{{WallNS: 100, OnCPUNS: 10, BlockedNS: 90}}}
	d.Threads[0].TID, d.Threads[0].Comm = 7, "w"
	d.Waits = []Wait{{Tid: 7, Comm: "w", NS: 90, Count: 3, Syscall: "futex", Frames: kframes("futex_wait"),
		WakerTid: 8, WakerComm: "holder", WakerFrames: ufr("/x", "release_lock"), WakerLastKnown: true, WakerLast: kframes("do_nanosleep"),
		WakerLastNS: 50, stack: "a", wakerLast: "b"}}
	d.CPU = []CPU{{Tid: 7, NS: 10, Frames: ufr("/x", "spin")}}
	r := Analyze(d, 5)
	var doc struct {
		Findings []struct {
			Kind   string  `json:"kind"`
			Share  float64 `json:"share"`
			Frames []Frame `json:"frames"`
			Chain  []struct {
				Comm   string  `json:"comm"`
				TID    int     `json:"tid"`
				Frames []Frame `json:"frames"`
			} `json:"chain"`
		} `json:"findings"`
	}
	var b strings.Builder
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) != 2 || doc.Findings[0].Kind != ReasonLock || doc.Findings[0].Share != 0.9 || doc.Findings[1].Kind != "cpu" {
		t.Fatalf("findings: %+v", doc.Findings)
	}
	c := doc.Findings[0].Chain
	if len(c) != 1 || c[0].Comm != "holder" || c[0].TID != 8 || len(c[0].Frames) != 1 || len(doc.Findings[0].Frames) != 1 {
		t.Errorf("chain: %+v", c)
	}
	var text strings.Builder
	r.WriteText(&text)
	t.Log("\n" + text.String())
}

// The folded wall-clock stacks hold every target thread's time once.
func TestFolded(t *testing.T) {
	d := &Data{Threads: []Thread{{WallNS: 100, OnCPUNS: 30, RunnableNS: 10, BlockedNS: 60}}}
	d.Threads[0].TID, d.Threads[0].Comm = 7, "w"
	d.Waits = []Wait{{Tid: 7, NS: 60, Syscall: "futex", Frames: append(kframes("futex_wait"), ufr("/x", "take", "main")...)}}
	d.CPU = []CPU{{Tid: 7, NS: 25, Frames: ufr("/x", "spin", "main")}}
	var b strings.Builder
	if err := WriteFolded(&b, d); err != nil {
		t.Fatal(err)
	}
	want := "w;blocked: lock;main;take;futex_wait_[k] 60\nw;on-CPU 5\nw;on-CPU;main;spin 25\nw;runnable 10\n"
	if b.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", b.String(), want)
	}
}
