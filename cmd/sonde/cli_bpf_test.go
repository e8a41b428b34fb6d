package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/commands"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestBPFCommandLines: the bcc and perf habits the BPF tools accept parse
// to what they mean (checked on the real command tree, without tracing).
func TestBPFCommandLines(t *testing.T) {
	cases := []struct {
		name  string
		line  string
		flags map[string]string // flag → value after parsing
		args  []string          // positional arguments left
		dur   time.Duration     // the run's length, from -d or a bare number (commands that take one)
	}{
		{name: "bcc_positional_seconds", line: "offcpu 5", args: []string{"5"}, dur: 5 * time.Second},
		{name: "d_in_seconds", line: "offcpu -d 2", dur: 2 * time.Second},
		{name: "d_as_go_duration", line: "wakeup -d 1m30s", dur: 90 * time.Second},
		{name: "flags_after_duration", line: "offcpu 5 -p 42", flags: map[string]string{"pid": "42"}, args: []string{"5"}, dur: 5 * time.Second},
		{name: "combined_short_flags", line: "offcpu -Kf 2.5", flags: map[string]string{"kernel": "true", "folded": "true"}, args: []string{"2.5"}, dur: 2500 * time.Millisecond},
		{name: "bcc_min_block", line: "wakeup -p 42 -m 100 -M 5000 --per-thread 3", flags: map[string]string{"min-block": "100", "max-block": "5000", "per-thread": "true"}, args: []string{"3"}, dur: 3 * time.Second},
		{name: "perf_ag", line: "profile -ag 5", flags: map[string]string{"all-cpus": "true", "callchain": "true"}, args: []string{"5"}, dur: 5 * time.Second},
		{name: "perf_aF99", line: "profile -aF99 -d 1", flags: map[string]string{"all-cpus": "true", "freq": "99"}, dur: time.Second},
		{name: "profile_long_flags", line: "profile --freq 49 --pid 42 --flamegraph x.html --output p.data 10", flags: map[string]string{"freq": "49", "pid": "42", "flamegraph": "x.html", "output": "p.data"}, args: []string{"10"}, dur: 10 * time.Second},
		{name: "profile_cpus_user", line: "profile -aU -C 0-1 5", flags: map[string]string{"cpu": "0-1", "user": "true"}, args: []string{"5"}, dur: 5 * time.Second},
		{name: "funclat_pid_after_function", line: "funclat ./srv:handle -p 42", flags: map[string]string{"pid": "42"}, args: []string{"./srv:handle"}},
		{name: "funclat_everywhere", line: "funclat -u ms libc:getaddrinfo -d 10 -i 1", flags: map[string]string{"unit": "ms", "duration": "10s", "interval": "1s"}, args: []string{"libc:getaddrinfo"}, dur: 10 * time.Second},
		{name: "syscount_command_keeps_its_flags", line: "syscount -L ls -l", flags: map[string]string{"latency": "true"}, args: []string{"ls", "-l"}},
		{name: "syscount_pid_then_command", line: "syscount -p 42 sleep 5", flags: map[string]string{"pid": "42"}, args: []string{"sleep", "5"}},
		{name: "syscount_bcc_shorts", line: "syscount -LP -T 5 -d 2", flags: map[string]string{"latency": "true", "per-process": "true", "top": "5"}, dur: 2 * time.Second},
		{name: "runqlat_bcc_pids", line: "runqlat -P 5", flags: map[string]string{"pids": "true"}, args: []string{"5"}, dur: 5 * time.Second},
		{name: "runqlat_bcc_tids", line: "runqlat -L -p 42 -i 0.5 -d 10", flags: map[string]string{"tids": "true", "interval": "500ms"}, dur: 10 * time.Second},
		{name: "biolat_bcc_QD", line: "biolat -QD 10", flags: map[string]string{"queued": "true", "disks": "true"}, args: []string{"10"}, dur: 10 * time.Second},
		{name: "biolat_stages", line: "biolat --stages -u ms 4.5", flags: map[string]string{"stages": "true", "unit": "ms"}, args: []string{"4.5"}, dur: 4500 * time.Millisecond},
		{name: "biosnoop", line: "biosnoop --comm dd 5 --json", flags: map[string]string{"comm": "dd", "json": "true"}, args: []string{"5"}, dur: 5 * time.Second},
		{name: "cputime_vmstat_style", line: "cputime 1 5", args: []string{"1", "5"}},
		{name: "cputime_flags", line: "cputime -i 0.5 -n 3 --per-cpu --compare-sampled -F 100", flags: map[string]string{"interval": "500ms", "count": "3", "per-cpu": "true", "freq": "100"}},
		{name: "top_batch", line: "top -b 3 -i 0.5 --rows 5", flags: map[string]string{"batch": "3", "interval": "500ms", "rows": "5"}},
		{name: "listen", line: "listen udp://:9999", args: []string{"udp://:9999"}},
	}
	takesDuration := map[string]bool{"offcpu": true, "wakeup": true, "profile": true, "runqlat": true, "biolat": true, "biosnoop": true, "syscount": true, "funclat": true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd, rest, err := commands.Root("dev").Find(strings.Fields(c.line))
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("parsing: %v", err)
			}
			args := cmd.Flags().Args()
			if err := cmd.ValidateArgs(args); err != nil {
				t.Fatalf("arguments: %v", err)
			}
			for name, want := range c.flags {
				f := cmd.Flags().Lookup(name)
				if f == nil {
					t.Fatalf("no flag --%s", name)
				}
				if got := f.Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
			if strings.Join(args, " ") != strings.Join(c.args, " ") {
				t.Errorf("arguments %q, want %q", args, c.args)
			}
			if !takesDuration[cmd.Name()] {
				return
			}
			l := &cli.Live{}
			l.Duration, _ = cli.ParseDuration(cmd.Flags().Lookup("duration").Value.String())
			if cmd.Name() != "funclat" && cmd.Name() != "syscount" && len(args) > 0 {
				if err := l.BareDuration(cmd, args); err != nil {
					t.Fatalf("duration: %v", err)
				}
			}
			if d := l.Duration; d != c.dur {
				t.Errorf("traces for %v, want %v", d, c.dur)
			}
		})
	}
}

// TestBPFBadCommandLines: a wrong command line gets one line saying what
// is wrong and how to fix it, and exit status 2 — before any tracing.
func TestBPFBadCommandLines(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"two_positionals", "offcpu 5 6", "the only argument is how long to trace"},
		{"two_durations", "offcpu -d 2 5", "two durations"},
		{"word_for_duration", "offcpu soon", "in seconds (offcpu 5)"},
		{"bad_d", "profile -d soon", "want seconds (5) or a duration"},
		{"user_and_kernel", "offcpu -UK 1", "-U/--user and -K/--kernel conflict"},
		{"bad_state", "wakeup --state X 1", "unknown state"},
		{"short_interval", "offcpu -i 10ms 1", "at least 100ms"},
		{"all_and_pid", "profile -a -p 1 1", "-a/--all-cpus and -p/--pid conflict"},
		{"zero_freq", "profile -F 0 1", "-F/--freq 0: want a positive number"},
		{"bad_pid", "offcpu -p abc", "-p/--pid abc: want a whole number"},
		{"funclat_nothing", "funclat -d 1", "give functions"},
		{"funclat_unit", "funclat -u parsecs -d 1 libc:malloc", "unknown unit"},
		{"bcc_runqlat_interval_count", "runqlat 1 10", "-i 1s -d 10s"},
		{"runqlat_pids_and_tids", "runqlat -P -L 1", "-P/--pids and -L/--tids conflict"},
		{"misspelt_flag", "biolat --stage 1", "did you mean --stages"},
		{"cputime_bad_count", "cputime 1 x", "count"},
		{"cputime_short_interval", "cputime 0.001", "at least 10ms"},
		{"cputime_three_args", "cputime 1 2 3", "INTERVAL [COUNT]"},
		{"top_argument", "top 5", "top takes no arguments"},
		{"top_bad_batch", "top -b -1", "-b/--batch -1: want 0 or more"},
		{"listen_nothing", "listen", "give one address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := runBounded(t, strings.Fields(c.line))
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("sonde %s: exit %d, stderr %q; want exit 2 and one line with %q", c.line, code, stderr, c.want)
			}
		})
	}
}

// runBounded runs sonde; a bad line that tracing started instead of
// refusing is stopped after a while (and fails its test).
func runBounded(t *testing.T, args []string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Sonde(t), args...)
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), e.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, e.String()
}

// TestBPFHelp: help for each BPF command works both ways and names its
// usage line.
func TestBPFHelp(t *testing.T) {
	for _, s := range commands.Specs() {
		if s.Group != commands.BPF {
			continue
		}
		for _, args := range [][]string{{"help", s.Name}, {s.Name, "-h"}} {
			r := testutil.Run(t, t.TempDir(), args...)
			if r.Code != 0 || !strings.Contains(r.Stdout, "sonde "+s.Name) || !strings.Contains(r.Stdout, "Flags:") {
				t.Errorf("sonde %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
			}
		}
	}
}
