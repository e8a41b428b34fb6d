package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/commands"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// cliCase is one command line: what it must print and how it must exit.
type cliCase struct {
	name   string
	args   []string
	code   int    // wanted exit status
	stdout string // regexp stdout must match ("" for any)
	stderr string // regexp stderr must match ("" for any)
	usage  bool   // prints usage, so more than one line
}

func runCLICases(t *testing.T, dir string, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testutil.Run(t, dir, c.args...)
			if r.Code != c.code {
				t.Errorf("sonde %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), r.Code, c.code, r.Stdout, r.Stderr)
			}
			if c.stdout != "" && !regexp.MustCompile(c.stdout).MatchString(r.Stdout) {
				t.Errorf("sonde %s: stdout does not match %q:\n%s", strings.Join(c.args, " "), c.stdout, r.Stdout)
			}
			if c.stderr != "" && !regexp.MustCompile(c.stderr).MatchString(r.Stderr) {
				t.Errorf("sonde %s: stderr does not match %q:\n%s", strings.Join(c.args, " "), c.stderr, r.Stderr)
			}
			// A bad command line is one line saying what to do, never usage.
			if c.code == 2 && !c.usage && (strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 || strings.Contains(r.Stderr, "Usage:")) {
				t.Errorf("sonde %s: want one line on stderr, got:\n%s", strings.Join(c.args, " "), r.Stderr)
			}
		})
	}
}

// TestCLIHabits runs the perf and bcc habits that need no privileges: help,
// version, suggestions, parsing, and one-line errors with the fix.
func TestCLIHabits(t *testing.T) {
	dir := t.TempDir()
	runCLICases(t, dir, []cliCase{
		{name: "version_flag", args: []string{"--version"}, stdout: `^sonde \S+\n$`},
		{name: "version_command", args: []string{"version"}, stdout: `^sonde \S+\n$`},
		{name: "help_command", args: []string{"help", "record"}, stdout: `(?s)Usage:\s+sonde record.*-g, --callchain.*--call-graph.*-F, --freq`},
		{name: "help_flag", args: []string{"record", "-h"}, stdout: `-p, --pid`},
		{name: "bare_sonde_is_help", args: nil, code: 2, usage: true, stderr: `(?s)Recording, counting and reports:.*Live BPF tools:`},
		{name: "did_you_mean_command", args: []string{"recrod"}, code: 2, stderr: `unknown command "recrod"; did you mean record`},
		{name: "unknown_command_far", args: []string{"xyz"}, code: 2, stderr: `^sonde: unknown command "xyz" \(sonde help lists the commands\)\n$`},
		{name: "help_unknown_topic", args: []string{"help", "recod"}, code: 2, stderr: `unknown command "recod"; did you mean record\?`},
		{name: "did_you_mean_flag", args: []string{"record", "--durration", "5", "-a"}, code: 2, stderr: `unknown flag: --durration; did you mean --duration\?`},
		{name: "unknown_shorthand", args: []string{"stat", "-Z", "true"}, code: 2, stderr: `'Z'.*see sonde stat -h`},
		{name: "conflicting_targets", args: []string{"record", "-a", "-p", "1", "true"}, code: 2, stderr: `-a/--all-cpus and -p/--pid conflict`},
		{name: "conflicting_targets_combined", args: []string{"stat", "-ap1"}, code: 2, stderr: `-a/--all-cpus and -p/--pid conflict`},
		{name: "pid_and_tid", args: []string{"record", "-p", "1", "-t", "1"}, code: 2, stderr: `-p/--pid and -t/--tid conflict`},
		{name: "freq_and_count", args: []string{"record", "-F99", "-c", "1000", "true"}, code: 2, stderr: `-F/--freq and -c/--count conflict`},
		{name: "bad_freq", args: []string{"record", "-Ffast", "true"}, code: 2, stderr: `-F/--freq fast: want a positive number`},
		{name: "call_graph_lbr", args: []string{"record", "--call-graph", "lbr", "true"}, code: 2, stderr: `--call-graph lbr: needs a hardware PMU`},
		{name: "call_graph_bad", args: []string{"record", "--call-graph", "sideways", "true"}, code: 2, stderr: `want auto, fp, dwarf or no`},
		{name: "bad_duration", args: []string{"record", "-a", "-d", "soon"}, code: 2, stderr: `-d/--duration soon: want seconds \(5\) or a duration`},
		{name: "negative_duration", args: []string{"stat", "-a", "-d", "-1"}, code: 2, stderr: `negative`},
		{name: "no_target", args: []string{"record"}, code: 2, stderr: `nothing to record: give a command, -p PID, -t TID or -a`},
		{name: "missing_pid", args: []string{"record", "-p", "999999999"}, code: 1, stderr: `pid 999999999: no such process`},
		{name: "missing_command", args: []string{"stat", "--", "/nonexistent/cmd"}, code: 1, stderr: `command not found: /nonexistent/cmd`},
		{name: "stat_interval_too_short", args: []string{"stat", "-a", "-I", "5"}, code: 2, stderr: `-I/--interval-print 5ms: want at least 10ms`},
		// report -g takes an optional argument, so these parse and get as
		// far as opening the (missing) data file: exit 1, not a usage error.
		{name: "report_g_no_argument", args: []string{"report", "-g", "-i", "none.data"}, code: 1, stderr: `no such file`},
		{name: "report_g_separate_argument", args: []string{"report", "-i", "none.data", "-g", "callee,1"}, code: 1, stderr: `no such file`},
		{name: "report_g_attached_argument", args: []string{"report", "-g=callee", "-i", "none.data"}, code: 1, stderr: `no such file`},
		{name: "report_g_bad", args: []string{"report", "-g", "sideways", "-i", "none.data"}, code: 2, stderr: `-g "sideways": want caller, callee or none`},
		{name: "report_positional", args: []string{"report", "a.data"}, code: 2, stderr: `unexpected argument "a.data" \(the data file goes after -i\)`},
		// Flags after positional arguments.
		{name: "diff_flags_after_files", args: []string{"diff", "a.data", "b.data", "--min", "1", "-s", "sym"}, code: 1, stderr: `a.data`},
		{name: "annotate_flags_after_symbol", args: []string{"annotate", "spin_a", "-i", "none.data", "--no-source"}, code: 1, stderr: `no such file`},
		{name: "list_two_globs", args: []string{"list", "a", "b"}, code: 2, stderr: `accepts at most 1 arg.*see sonde list -h`},
		{name: "completion_unknown_shell", args: []string{"completion", "tcsh"}, code: 2, stderr: `tcsh`},
		{name: "diff_one_file", args: []string{"diff", "a.data"}, code: 2, stderr: `give two data files: BASE NEW`},
		{name: "completion_zsh", args: []string{"completion", "zsh"}, stdout: `#compdef sonde`},
		{name: "completion_fish", args: []string{"completion", "fish"}, stdout: `complete -c sonde`},
	})
}

// TestCLIRecordHabits runs the habits that record or count: combined short
// flags, -F99, --call-graph fp, `-p PID sleep N`, -d in bare seconds, and
// report -g without an argument on the recording.
func TestCLIRecordHabits(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	spin := cpuHog(t)
	pid := strconv.Itoa(spin.Process.Pid)

	start := time.Now()
	testutil.MustRun(t, dir, "record", "-q", "-p", pid, "-gF99", "-o", "p.data", "sleep", "1")
	// -g loads the BPF unwinder first (its verification takes seconds on
	// a loaded 2-vCPU VM); sleep starts only after that.
	if el := time.Since(start); el < time.Second || el > 15*time.Second {
		t.Errorf("record -p PID sleep 1 took %s, want about 1 s", el)
	}
	p, err := datafile.ReadFile(filepath.Join(dir, "p.data"))
	if err != nil {
		t.Fatal(err)
	}
	// The spinning shell runs all the time: about 99 samples, all its own.
	if n := len(p.Samples); n < 50 || n > 150 {
		t.Errorf("record -p PID -F99 sleep 1: %d samples, want about 99", n)
	}
	for _, s := range p.Samples[:min(len(p.Samples), 20)] {
		if th := p.Threads[s.Thread]; int(th.Pid) != spin.Process.Pid {
			t.Fatalf("sample of pid %d (%s), want only %s", th.Pid, th.Comm, pid)
		}
	}
	if !p.Meta.Callchain {
		t.Errorf("-gF99 did not record call chains")
	}

	runCLICases(t, dir, []cliCase{
		{name: "ag_F99_d_seconds", args: []string{"record", "-agF99", "-d", "0.5", "-q", "-o", "a.data"}},
		{name: "call_graph_fp", args: []string{"record", "--call-graph", "fp", "-F", "99", "-q", "-o", "fp.data", "--", "sh", "-c", "exit 3"}, code: 3},
		{name: "report_g_alone", args: []string{"report", "-i", "p.data", "-g", "--stdio"}, stdout: `# Samples: \d+`},
		{name: "report_g_callee", args: []string{"report", "-i", "p.data", "-g", "callee,1", "-s", "comm,sym"}, stdout: `sh`},
		{name: "report_flags_anywhere", args: []string{"report", "--no-children", "-i", "p.data", "--percent-limit", "1"}, stdout: `sh`},
		{name: "stat_d_seconds", args: []string{"stat", "-a", "-e", "cpu-clock", "-d", "1"}, stderr: `cpu-clock`},
		{name: "stat_pid_sleep", args: []string{"stat", "-e", "task-clock", "-p", pid, "sleep", "0.5"}, stderr: `process id '` + pid + `'`},
	})
	// stat -d 1 lasts one second (bare seconds, as bcc).
	r := testutil.MustRun(t, dir, "stat", "-a", "-e", "cpu-clock", "-d", "1", "--json")
	var el float64
	if m := regexp.MustCompile(`"duration_ns": (\d+)`).FindStringSubmatch(r.Stderr); m != nil {
		el, _ = strconv.ParseFloat(m[1], 64)
	}
	if el < 0.9e9 || el > 2e9 {
		t.Errorf("stat -d 1 measured for %.0f ns, want about 1 s\n%s", el, r.Stderr)
	}
}

// TestCompletionBash checks the bash script's syntax and completes
// `sonde rec<TAB>` in a real interactive bash (in tmux).
func TestCompletionBash(t *testing.T) {
	dir := t.TempDir()
	bin := testutil.Sonde(t)
	script := filepath.Join(dir, "sonde.bash")
	r := testutil.MustRun(t, dir, "completion", "bash")
	if err := os.WriteFile(script, []byte(r.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Tool(t, "bash", "-n", script)
	tmux := testutil.RequireTool(t, "tmux", "tmux")
	sock := fmt.Sprintf("sonde-cli-test-%d", os.Getpid())
	tm := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// cobra's bash script builds on the bash-completion package, as the
	// scripts of most tools do.
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		if os.Getenv("SONDE_REQUIRE_PRIVILEGED") != "" {
			t.Fatalf("%s missing: apt-get install bash-completion", bashCompletion)
		}
		t.Skipf("%s missing: apt-get install bash-completion", bashCompletion)
	}
	rc := filepath.Join(dir, "bashrc")
	os.WriteFile(rc, []byte(fmt.Sprintf("PS1='$ '\nPATH=%s:$PATH\nsource %s\nsource %s\n", filepath.Dir(bin), bashCompletion, script)), 0o644)
	// An empty directory, so that file names cannot complete "rec".
	home := mkdir(t, dir, "empty")
	tm("new-session", "-d", "-c", home, "-x", "200", "-y", "20", "bash", "--noprofile", "--rcfile", rc, "-i")
	defer exec.Command(tmux, "-L", sock, "kill-server").Run()
	screen := func(want string) string {
		var s string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if s = tm("capture-pane", "-p"); strings.Contains(s, want) {
				break
			}
		}
		return s
	}
	screen("$")
	tm("send-keys", "sonde rec", "Tab")
	if s := screen("$ sonde record"); !strings.Contains(s, "$ sonde record") {
		t.Errorf("sonde rec<TAB> did not complete to 'sonde record':\n%s", s)
	}
	// A flag's name completes too: sonde record --call<TAB>.
	tm("send-keys", "--", "--call", "Tab", "Tab")
	if s := screen("--call-graph"); !strings.Contains(s, "--call-graph") {
		t.Errorf("sonde record --call<TAB> did not offer --call-graph:\n%s", s)
	}
}

// TestManPages checks that `make man` writes a page per command.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	mk := testutil.RequireTool(t, "make", "make")
	testutil.Tool(t, mk, "-C", testutil.RepoRoot(), "man", "OUT="+dir)
	for _, c := range commands.Root("dev").Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		page := filepath.Join(dir, "man", "sonde-"+c.Name()+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("no man page for %s: %v", c.Name(), err)
			continue
		}
		if !strings.Contains(string(b), ".SH OPTIONS") && c.HasAvailableFlags() {
			t.Errorf("%s has no OPTIONS section", page)
		}
		// The header names the page's own command: SONDE-RECORD(1).
		if th := `.TH "SONDE-` + strings.ToUpper(c.Name()) + `" "1"`; !strings.Contains(string(b), th) {
			t.Errorf("%s: no header %s", page, th)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "man", "sonde.1")); err != nil {
		t.Errorf("no sonde.1: %v", err)
	}
}

// TestHelpCatalogue checks internal/cmd/cli/commands.md against the command
// tree: every command has its summary there, and no section is left over
// from a command that is gone.
func TestHelpCatalogue(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden && c.Short == "" {
			t.Errorf("%s has no summary line in internal/cmd/cli/commands.md", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(commands.Root("dev"))
	if left := cli.UnusedHelp(); len(left) > 0 {
		t.Errorf("internal/cmd/cli/commands.md has sections no command takes: %q", left)
	}
}

// TestCompletionValues asks sonde what the shell scripts ask it (sonde
// __complete …, as bash, zsh and fish do on TAB): sort keys, comma lists
// continued, generic events and this machine's tracepoints.
func TestCompletionValues(t *testing.T) {
	complete := func(args ...string) []string {
		t.Helper()
		out := testutil.MustRun(t, t.TempDir(), append([]string{"__complete"}, args...)...).Stdout
		var vals []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") { // the last line is the directive
				vals = append(vals, l)
			}
		}
		return vals
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", "-s", ""}, []string{"comm", "pid", "tid", "dso", "sym", "cpu", "srcline"}},
		{[]string{"report", "--sort", "comm,d"}, []string{"comm,dso"}},
		{[]string{"report", "-s", "sym,"}, []string{"sym,comm", "sym,pid", "sym,tid", "sym,dso", "sym,cpu", "sym,srcline"}},
		{[]string{"diff", "-s", "s"}, []string{"sym"}},
		{[]string{"ftrace", "report", "-s", "m"}, []string{"max", "min"}},
		{[]string{"filetop", "-s", "r"}, []string{"reads", "rbytes"}},
		{[]string{"stat", "-e", "cpu-c"}, []string{"cpu-clock", "cpu-cycles"}},
		{[]string{"record", "-e", "page-faults,cpu-cl"}, []string{"page-faults,cpu-clock"}},
	} {
		if got := complete(c.args...); !slices.Equal(got, c.want) {
			t.Errorf("sonde %s<TAB>: %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
	if _, err := tracefs.Events(); err != nil {
		t.Logf("tracepoints not listed here (%v): generic events only", err)
		return
	}
	if got := complete("record", "-e", "sched:sched_swi"); !slices.Equal(got, []string{"sched:sched_switch"}) {
		t.Errorf("sonde record -e sched:sched_swi<TAB>: %q", got)
	}
	if got := complete("stat", "-e", "sche"); !slices.Contains(got, "sched:") {
		t.Errorf("sonde stat -e sche<TAB>: %q, want the sched: subsystem", got)
	}
}
