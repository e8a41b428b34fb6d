package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// badPids are a pid that does not exist, a zombie (a child of the test not
// yet reaped) and a thread of the test process that is not its main one.
type badPids struct{ missing, zombie, thread string }

func newBadPids(t *testing.T) badPids {
	t.Helper()
	// No pid reaches pid_max, so pid_max itself never exists.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	z := testutil.Start(t, "true") // reaped when the test ends
	for {                          // a zombie once it has exited and until Wait
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(z.Process.Pid) + "/stat")
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			break
		}
		syscall.Nanosleep(&syscall.Timespec{Nsec: 1e6}, nil)
	}
	var thread string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, e := range tasks {
		if e.Name() != strconv.Itoa(os.Getpid()) {
			thread = e.Name() // the Go runtime always runs more than one thread
			break
		}
	}
	if thread == "" {
		t.Fatal("the test process has no thread but its main one")
	}
	return badPids{missing: strings.TrimSpace(string(b)), zombie: strconv.Itoa(z.Process.Pid), thread: thread}
}

// badCase is a bad command line and how sonde must refuse it.
type badCase struct {
	name string
	args []string
	code int    // 0: any non-zero
	want string // regexp on stderr
	priv bool   // reaches the kernel: needs root
}

// TestBadInput runs every kind of bad input the trust issue listed through
// the binary: each ends with one line on stderr naming the cause, and a
// non-zero exit, before anything is measured. The rows marked priv reach
// the kernel (attach probing, symbol tables after the privilege check).
func TestBadInput(t *testing.T) {
	p := newBadPids(t)
	dir := t.TempDir()
	self := strconv.Itoa(os.Getpid())
	cases := []badCase{
		// Conflicting targets: an error naming both flags.
		{name: "stat_a_and_p", args: []string{"stat", "-a", "-p", self}, code: 2, want: `-a/--all-cpus and -p/--pid conflict`},
		{name: "record_p_and_t", args: []string{"record", "-p", self, "-t", self}, code: 2, want: `-p/--pid and -t/--tid conflict`},
		{name: "profile_a_and_p", args: []string{"profile", "-a", "-p", self}, code: 2, want: `-a/--all-cpus and -p/--pid conflict`},
		{name: "sample_F_and_c", args: []string{"record", "-a", "-F", "99", "-c", "1000"}, code: 2, want: `-F/--freq and -c/--count conflict`},

		// Numeric options out of range: one line, flag and value named.
		{name: "negative_duration", args: []string{"stat", "-d", "-1s", "-a"}, code: 2, want: `-d/--duration -1s: negative`},
		{name: "zero_duration", args: []string{"stat", "--duration", "0s", "-a"}, code: 2, want: `-d/--duration 0s: want a positive duration`},
		{name: "zero_duration_bpf", args: []string{"offcpu", "-d", "0"}, code: 2, want: `-d/--duration 0s: want a positive duration`},
		{name: "record_zero_freq", args: []string{"record", "-F", "0", "-a"}, code: 2, want: `-F/--freq 0: want a positive number`},
		{name: "profile_zero_freq", args: []string{"profile", "-F", "0"}, code: 2, want: `-F/--freq 0: want a positive number`},
		{name: "zero_count", args: []string{"record", "-c", "0", "-a"}, code: 2, want: `-c/--count 0: want a positive number`},
		{name: "min_above_max_block", args: []string{"offcpu", "--min-block", "100", "--max-block", "10"}, code: 2, want: `-m/--min-block 100 is above -M/--max-block 10`},
		{name: "negative_interval", args: []string{"runqlat", "-i", "-1"}, code: 2, want: `-i/--interval -1: negative`},
		{name: "zero_interval", args: []string{"profile", "-i", "0"}, code: 2, want: `-i/--interval 0s: want at least 100ms`},
		{name: "stat_short_interval", args: []string{"stat", "-I", "5", "-a"}, code: 2, want: `-I/--interval-print 5ms: want at least 10ms`},
		{name: "cputime_zero_count", args: []string{"cputime", "-n", "0"}, code: 2, want: `-n/--count 0: want a positive number`},
		{name: "negative_top", args: []string{"syscount", "-T", "-1"}, code: 2, want: `-T/--top -1: want 0 or more`},
		{name: "percent_over_100", args: []string{"report", "--percent-limit", "200"}, code: 2, want: `--percent-limit 200: want 0 to 100`},
		{name: "negative_pid", args: []string{"runqlat", "-p", "-5"}, code: 2, want: `-p/--pid -5: want a positive number`},
		{name: "word_for_number", args: []string{"top", "--rows", "many"}, code: 2, want: `--rows many: want a whole number`},
		{name: "zero_mmap_pages", args: []string{"record", "-m", "0", "-a"}, code: 2, want: `-m/--mmap-pages 0: want a positive number`},

		// Output paths checked before anything runs.
		{name: "record_output_empty", args: []string{"record", "-o", "", "-a"}, code: 1, want: `no output file given`},
		{name: "huge_duration", args: []string{"stat", "-d", "1e20", "-a"}, code: 2, want: `-d/--duration 1e20: too long`},
		{name: "record_output_dir", args: []string{"record", "-o", dir, "-a"}, code: 1, want: `is a directory`},
		{name: "stat_output_missing_dir", args: []string{"stat", "-o", filepath.Join(dir, "no", "x"), "-a"}, code: 1, want: `cannot write .*no such file`},
	}
	// Every command that takes a pid checks it the same way.
	for _, c := range []struct {
		name string
		args []string
	}{
		{"profile", nil}, {"offcpu", nil}, {"wakeup", nil}, {"syscount", nil}, {"cputime", nil}, {"runqlat", nil},
		{"biosnoop", nil}, {"funclat", []string{"libc:getpid"}}, {"stat", nil}, {"record", nil},
		{"latency", []string{"--start", "block:block_rq_issue", "--end", "block:block_rq_complete"}},
		{"probe", []string{"--add", "main"}},
	} {
		for _, bad := range []struct{ kind, pid, want string }{
			{"missing", p.missing, `pid ` + p.missing + `: no such process`},
			{"zombie", p.zombie, `pid ` + p.zombie + ` \(true\): the process has exited \(a zombie`},
			{"thread", p.thread, `pid ` + p.thread + ` \(.*\) is a thread, not a process.*-p ` + self},
		} {
			args := append([]string{c.name, "-p", bad.pid}, c.args...)
			if c.name != "probe" { // bounded, should the check ever let one through
				args = append([]string{c.name, "-p", bad.pid, "-d", "1"}, c.args...)
			}
			cases = append(cases, badCase{name: c.name + "_" + bad.kind + "_pid", args: args, code: 1, want: bad.want})
		}
	}
	// why -t takes one thread: a missing or exited one is refused the same way.
	for _, bad := range []struct{ kind, tid, want string }{
		{"missing", p.missing, `^sonde why: tid ` + p.missing + `: no such process`},
		{"zombie", p.zombie, `^sonde why: tid ` + p.zombie + ` \(true\): the process has exited \(a zombie`},
	} {
		cases = append(cases, badCase{name: "why_" + bad.kind + "_tid", args: []string{"why", "-t", bad.tid, "-d", "1"}, code: 1, want: bad.want})
	}
	cases = append(cases, []badCase{
		{name: "funclat_kernel_function_without_kprobes", args: []string{"funclat", "-d", "1", "vfs_read"}, priv: true,
			want: `^sonde funclat: (cannot trace kernel function vfs_read: this kernel supports neither fentry \(.{0,60}\) nor kprobe \(.{0,60}\)|kernel function vfs_read needs)`},
		{name: "funclat_misspelt_kernel_function", args: []string{"funclat", "-d", "1", "vfs_reed"}, priv: true,
			want: `no kernel function "vfs_reed" in /proc/kallsyms \(nearest: .*vfs_read`},
		{name: "funclat_stripped", args: []string{"funclat", "-d", "1", "STRIPPED:main"}, priv: true,
			want: `/stripped has no symbol table \(stripped\)`},
		{name: "probe_stripped", args: []string{"probe", "--add", "-x", "STRIPPED", "main"}, priv: true,
			want: `stripped has no symbol table \(stripped\)`},
	}...)

	var stripped string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.priv {
				testutil.RequirePrivileged(t)
				if stripped == "" {
					stripped = testutil.BuildC(t, dir, "stripped", []string{"work.c"}, "-s")
				}
			}
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "STRIPPED", stripped)
			}
			code, stderr := runBounded(t, args)
			line := strings.TrimSpace(stderr)
			switch {
			case code == 0 || (c.code != 0 && code != c.code):
				t.Errorf("sonde %s: exit %d, want %d\n%s", strings.Join(args, " "), code, c.code, stderr)
			case strings.Contains(line, "\n") || len(line) > 300:
				t.Errorf("sonde %s: want one short line, got %d bytes:\n%s", strings.Join(args, " "), len(line), stderr)
			case !regexp.MustCompile(c.want).MatchString(line):
				t.Errorf("sonde %s: stderr %q does not match %q", strings.Join(args, " "), line, c.want)
			}
		})
	}
}
