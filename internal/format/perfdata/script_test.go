package perfdata

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func fold(t *testing.T, text string, o FoldOptions) string {
	t.Helper()
	m, err := FoldScript(strings.NewReader(text), o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteFolded(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFoldFixtures folds perf script text of the fixture like
// inferno-collapse-perf --all did (its output is checked in).
func TestFoldFixtures(t *testing.T) {
	for _, c := range []struct{ script, golden string }{
		{"tiny.script.txt", "tiny.inferno.folded"},
		{"tiny.script-F.txt", "tiny-F.inferno.folded"},
	} {
		got := fold(t, string(readFixture(t, c.script)), FoldOptions{Kernel: true, JIT: true})
		if want := string(readFixture(t, c.golden)); got != want {
			t.Errorf("%s:\n%s\nwant (inferno):\n%s", c.script, got, want)
		}
	}
}

// TestFoldFlameGraphSuite folds every file of FlameGraph's suite with each
// of inferno-collapse-perf's naming options and compares with what inferno
// makes of the same text in the same test, line for line.
func TestFoldFlameGraphSuite(t *testing.T) {
	inferno := testutil.RequireTool(t, "inferno-collapse-perf", "inferno (cargo install inferno; .ci/run does)")
	opts := []struct {
		flag string
		o    FoldOptions
	}{
		{"--all", FoldOptions{Kernel: true, JIT: true}},
		{"", FoldOptions{}},
		{"--pid", FoldOptions{PID: true}},
		{"--tid", FoldOptions{TID: true}},
		{"--kernel", FoldOptions{Kernel: true}},
		{"--jit", FoldOptions{JIT: true}},
		{"--addrs", FoldOptions{Addrs: true}},
	}
	for name, text := range testutil.FlameGraphSuite(t) {
		t.Run(strings.TrimSuffix(name, ".txt"), func(t *testing.T) {
			for _, o := range opts {
				var args []string
				if o.flag != "" {
					args = append(args, o.flag)
				}
				cmd := exec.Command(inferno, args...)
				cmd.Stdin = bytes.NewReader(text)
				want, err := cmd.Output()
				if err != nil {
					t.Fatalf("inferno-collapse-perf %s: %v", o.flag, err)
				}
				got := fold(t, string(text), o.o)
				g, w := strings.Split(strings.TrimSpace(got), "\n"), strings.Split(strings.TrimSpace(string(want)), "\n")
				testutil.SameLines(t, name+" "+o.flag, "inferno", g, w)
			}
		})
	}
}

func TestFoldConventions(t *testing.T) {
	cases := []struct {
		name string
		text string
		opts FoldOptions
		want string
	}{
		{
			name: "callchain_kernel_and_period",
			text: `work 20299 [000]   347.360384:     250000 cpu-clock:pppH: 
	ffffffff81e0015a asm_sysvec_apic_timer_interrupt+0x1a ([kernel.kallsyms])
	            1161 spin_a+0x11 (/tmp/work)
	            11db main (/tmp/work)

work 20299 [000]   347.360634:     250000 cpu-clock:pppH: 
	            1161 spin_a+0x11 (/tmp/work)
	            11db main (/tmp/work)
`,
			opts: FoldOptions{Kernel: true},
			want: "work;main;spin_a 250000\nwork;main;spin_a;asm_sysvec_apic_timer_interrupt_[k] 250000\n",
		},
		{
			name: "no_period_counts_samples",
			text: "java 12688/12764 6544038.708352: cycles:\n\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n\t7f722d142000 Interpreter (/tmp/perf-19982.map)\n\n" +
				"java 12688/12764 6544038.708353: cycles:\n\t7f722d142778 Ljava/io/PrintStream;::print (/tmp/perf-19982.map)\n\t7f722d142000 Interpreter (/tmp/perf-19982.map)\n\n",
			opts: FoldOptions{JIT: true, TID: true},
			want: "java-12688/12764;Interpreter_[j];java/io/PrintStream:::print_[j] 2\n",
		},
		{
			name: "unknown_frames_take_the_object_name",
			text: "a.out 77 1.0: 1 cycles:\n\t4005d0 [unknown] (/usr/bin/a.out)\n\t0 [unknown] ([unknown])\n\n",
			want: "a.out;[unknown];[a.out] 1\n",
		},
		{
			name: "addresses_of_unknown_frames",
			text: "a.out 77 1.0: 1 cycles:\n\t4005d0 [unknown] (/usr/bin/a.out)\n\t0 [unknown] ([unknown])\n\n",
			opts: FoldOptions{Addrs: true},
			want: "a.out;[unknown <0>];[a.out <4005d0>] 1\n",
		},
		{
			name: "arguments_cut_but_not_go_methods",
			// A frame starting with "(" is dropped, as FlameGraph does.
			text: "prog 5 1.0: 3 cycles:\n\t10 foo(int, char*) (/bin/prog)\n\t20 net/http.(*Client).Do (/bin/prog)\n\t30 (anonymous namespace)::run() (/bin/prog)\n\t40 std::vector<int>::push_back(int const&) (/bin/prog)\n\t50 ns::(anonymous namespace)::go(int) (/bin/prog)\n\n",
			want: "prog;ns::(anonymous namespace)::go;std::vector<int>::push_back;net/http.(*Client).Do;foo 3\n",
		},
		{
			name: "comm_with_spaces_and_single_line_samples",
			text: "V8 WorkerThread 24636/25607 [000] 94564.109216:     10 cycles:u:  ffffffff9aa3c8de do_thing ([kernel.kallsyms])\n" +
				"V8 WorkerThread 24636/25607 [000] 94564.109217:     10 cycles:u:  ffffffff9aa3c8de do_thing ([kernel.kallsyms])\n",
			opts: FoldOptions{Kernel: true, PID: true},
			want: "V8_WorkerThread-24636;do_thing_[k] 20\n",
		},
		{
			name: "pid_minus_one",
			text: "     :-1    -1/-1      350.502464:          1 sched:sched_switch:  ffffffff82265488 __schedule ([kernel.kallsyms])\n",
			opts: FoldOptions{TID: true},
			want: ":-1--1/-1;__schedule 1\n",
		},
		{
			name: "first_event_only",
			text: "w 1 1.0:     100  cpu-clock:  10 a (/bin/w)\nw 1 1.1:     100 task-clock:  10 b (/bin/w)\nw 1 1.2:     100  cpu-clock:  10 a (/bin/w)\n",
			want: "w;a 200\n",
		},
		{
			name: "event_filter",
			text: "w 1 1.0:     100  cpu-clock:  10 a (/bin/w)\nw 1 1.1:     100 task-clock:  10 b (/bin/w)\n",
			opts: FoldOptions{Event: "task-clock"},
			want: "w;b 100\n",
		},
		{
			name: "java_inlined_frames",
			text: "java 1 1.0: 1 cycles:\n\t10 Lfoo/A;.a->Lfoo/B;.b (/tmp/perf-1.map)\n\n",
			opts: FoldOptions{JIT: true},
			want: "java;foo/A:.a_[j];foo/B:.b_[i] 1\n",
		},
		{
			name: "tracepoint_with_callchain",
			text: "sh 9 [001] 5.0: sched:sched_switch: prev_comm=sh prev_pid=9 ==> next_comm=swapper/1 next_pid=0\n" +
				"\tffffffff8225f7a7 __schedule+0x2f7 ([kernel.kallsyms])\n\tffffffff8225f9a0 schedule+0x30 ([kernel.kallsyms])\n\n" +
				"sh 9 [001] 5.1: sched:sched_switch: prev_comm=sh prev_pid=9 ==> next_comm=swapper/1 next_pid=0\n" +
				"\tffffffff8225f7a7 __schedule+0x2f7 ([kernel.kallsyms])\n\tffffffff8225f9a0 schedule+0x30 ([kernel.kallsyms])\n\n",
			want: "sh;schedule;__schedule 2\n",
		},
		{
			name: "header_comments_and_vmlinux",
			text: "# ========\n# captured on: x\nk 3 1.0: 1 cycles:\n\t8c3453 tcp_sendmsg (/lib/modules/4.3.0/build/vmlinux)\n\t7d8 ipv4_local+0x7f8 ([nf_conntrack_ipv4])\n\n",
			opts: FoldOptions{Kernel: true},
			want: "k;ipv4_local_[k];tcp_sendmsg_[k] 1\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fold(t, tc.text, tc.opts); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestScriptProfile turns perf script text into the model the views read.
func TestScriptProfile(t *testing.T) {
	p, err := ScriptProfile(bytes.NewReader(readFixture(t, "tiny.script.txt")))
	if err != nil {
		t.Fatal(err)
	}
	var a, total uint64
	for _, s := range p.Samples {
		total += s.Period
		if p.FrameName(p.Stacks[s.Stack][0]) == "spin_a" {
			a += s.Period
		}
		if p.Threads[s.Thread].Comm != "work" {
			t.Errorf("thread %+v", p.Threads[s.Thread])
		}
	}
	if len(p.Samples) != 39 || a != 58000000 || total != 78000000 || !p.Meta.Callchain || p.Meta.Event != "cpu-clock" {
		t.Errorf("%d samples, spin_a %d of %d, meta %+v", len(p.Samples), a, total, p.Meta)
	}
	st := p.Stacks[p.Samples[0].Stack]
	if len(st) != 3 || p.FrameName(st[1]) != "main" || p.DSOName(st[2]) != "libc.so.6" {
		t.Errorf("stack %v", st)
	}
	if _, err := ScriptProfile(strings.NewReader("not perf script\n")); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("error %v for text without samples", err)
	}
}

// FuzzParseScript: any text folds or fails cleanly.
func FuzzParseScript(f *testing.F) {
	f.Add(string(readFixture(f, "tiny.script.txt"))[:600])
	f.Add("w 1 1.0:     100  cpu-clock:  10 a (/bin/w)\n")
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := FoldScript(strings.NewReader(text), FoldOptions{Kernel: true, JIT: true, Addrs: true}); err != nil {
			t.Skip()
		}
		if p, err := ScriptProfile(strings.NewReader(text)); err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatal(verr)
			}
		}
	})
}

func TestLooksLikeScript(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{string(readFixture(t, "tiny.script.txt")), true},
		{string(readFixture(t, "tiny.script-F.txt")), true},
		{"# header\nw 1 1.0:     100  cpu-clock:  10 a (/bin/w)\n", true},
		{string(readFixture(t, "tiny.inferno.folded")), false},
		{"main;spin_a 10\n", false},
		{string(readFixture(t, "tiny.data")), false},
		{"", false},
	} {
		if got := LooksLikeScript([]byte(c.text)); got != c.want {
			t.Errorf("LooksLikeScript(%.40q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		file string
		want Format
	}{
		{"tiny.data", FormatData},
		{"tiny-pipe.data", FormatData},
		{"tiny.script.txt", FormatScript},
		{"tiny.inferno.folded", FormatOther},
		{"README.md", FormatOther},
	} {
		head := readFixture(t, c.file)
		if got := Sniff(head[:min(len(head), SniffLen)]); got != c.want {
			t.Errorf("Sniff(%s) = %v, want %v", c.file, got, c.want)
		}
	}
}

// TestScriptDuration: perf script text carries each sample's time, and an
// import's duration is the span of its samples (it said "in 0s"), the same
// as the perf.data file the text came from.
func TestScriptDuration(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
		want uint64
	}{
		// tiny.script.txt: 1328.366650 to 1328.442928.
		{"fixture", string(readFixture(t, "tiny.script.txt")), 76_278_000},
		{"ns", "a 1 [000] 5.000000001: 1 cpu-clock:\n\t1 f (/x)\n\na 1 [001] 5.250000003: 1 cpu-clock:\n\t1 f (/x)\n", 250_000_002},
		{"no_cpu", "a 1 7.5: 1 cpu-clock:\n\t1 f (/x)\n\na 1 8: 1 cpu-clock:\n\t1 f (/x)\n", 500_000_000},
		{"no_time", "a 1 1 cpu-clock:\n\t1 f (/x)\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ScriptProfile(strings.NewReader(c.text))
			if err != nil {
				t.Fatal(err)
			}
			if p.Meta.DurationNS != c.want {
				t.Errorf("duration %d ns, want %d", p.Meta.DurationNS, c.want)
			}
		})
	}
	// The perf.data file the fixture was made from says the same, to the
	// microsecond perf script prints.
	f, err := perfDataDuration(t, "tiny.data")
	if err != nil || f/1000 != 76_277 {
		t.Errorf("tiny.data: duration %d ns (%v), want the text's 76.278 ms to the µs", f, err)
	}
}

func perfDataDuration(t *testing.T, name string) (uint64, error) {
	p, _, err := Convert(bytes.NewReader(readFixture(t, name)), Options{})
	if err != nil {
		return 0, err
	}
	return p.Meta.DurationNS, nil
}
