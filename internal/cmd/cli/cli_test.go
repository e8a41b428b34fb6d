package cli

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "5", want: 5 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "-1", bad: true},
		{in: "-2s", bad: true},
		{in: "soon", bad: true},
		{in: "1e20", bad: true},
		{in: "NaN", bad: true},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestTargetResolve(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	cases := []struct {
		name  string
		flags TargetFlags
		args  []string
		check func(Target) bool
		err   string
	}{
		{name: "command", args: []string{"true"}, check: func(t Target) bool { return len(t.Command) == 1 && !t.All }},
		{name: "all_with_command", flags: TargetFlags{all: true}, args: []string{"true"}, check: func(t Target) bool { return t.All && len(t.Command) == 1 }},
		{name: "pid_with_command_runs_alongside", flags: TargetFlags{pids: self}, args: []string{"sleep", "5"},
			check: func(t Target) bool { return len(t.Command) == 0 && len(t.Alongside) == 2 && t.Pids[0] == os.Getpid() }},
		{name: "cpu_alone_means_all", flags: TargetFlags{cpus: "0"}, check: func(t Target) bool { return t.All && len(t.CPUs) == 1 }},
		{name: "pid_and_tid", flags: TargetFlags{pids: self, tids: self}, err: "-p/--pid and -t/--tid conflict"},
		{name: "all_and_pid", flags: TargetFlags{all: true, pids: self}, err: "-a/--all-cpus and -p/--pid conflict"},
		{name: "bad_pid", flags: TargetFlags{pids: "x"}, err: `-p/--pid "x"`},
		{name: "missing_pid", flags: TargetFlags{pids: "999999999"}, err: "pid 999999999: no such process"},
		{name: "missing_command", args: []string{"/nonexistent/cmd"}, err: "command not found"},
		{name: "empty", check: Target.Empty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.flags.Resolve(c.args)
			if testutil.WantErr(t, err, c.err) {
				return
			}
			if !c.check(got) {
				t.Errorf("target %+v", got)
			}
		})
	}
}

func TestDidYouMean(t *testing.T) {
	names := []string{"record", "report", "stat", "script", "top"}
	for _, c := range []struct{ in, want string }{
		{"recrod", "; did you mean record?"},
		{"rep", "; did you mean report?"},
		{"stta", "; did you mean stat?"},
		{"xyz", ""},
		{"r", "; did you mean record or report?"},
	} {
		if got := didYouMean(c.in, names, ""); got != c.want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A command run alongside ends the measurement, and its status is sonde's.
func TestMeasureAlongside(t *testing.T) {
	start := time.Now()
	tg := Target{Pids: []int{os.Getpid()}, Alongside: []string{"sh", "-c", "sleep 0.3; exit 5"}}
	code, err := tg.Measure(context.Background(), func(ctx context.Context) (int, error) {
		<-ctx.Done() // a measurement runs until its context ends
		return 0, nil
	})
	if err != nil || code != 5 {
		t.Errorf("Measure = %d, %v; want the alongside command's 5", code, err)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 3*time.Second {
		t.Errorf("measured for %s, want about 0.3 s (the command's run)", el)
	}
	// A measurement that ends first (-d) stops the command.
	start = time.Now()
	tg.Alongside = []string{"sleep", "30"}
	tg.Measure(context.Background(), func(context.Context) (int, error) { return 0, nil })
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("the alongside command outlived the measurement by %s", el)
	}
	// A measured command's status comes from the measurement.
	tg = Target{Command: []string{"true"}}
	if code, _ := tg.Measure(context.Background(), func(context.Context) (int, error) { return 7, nil }); code != 7 {
		t.Errorf("Measure = %d, want the measured command's 7", code)
	}
}

// The status sonde passes on from a command run alongside (record -p PID
// -- sleep N): the command's own when it ends by itself, 0 when the
// measurement ends first and sonde stops it (it was 255: the status of a
// process killed by a signal read as -1).
func TestAlongsideStatus(t *testing.T) {
	for _, c := range []struct {
		name  string
		argv  []string
		first bool // the measurement ends before the command
		want  int
	}{
		{"exits_0", []string{"true"}, false, 0},
		{"exits_5", []string{"sh", "-c", "exit 5"}, false, 5},
		{"killed_by_another", []string{"sh", "-c", "kill -TERM $$"}, false, 128 + 15},
		{"stopped_by_sonde", []string{"sleep", "30"}, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := Target{Pids: []int{os.Getpid()}, Alongside: c.argv}
			code, err := tg.Measure(context.Background(), func(ctx context.Context) (int, error) {
				if !c.first {
					<-ctx.Done() // until the command ends
				}
				return 0, nil
			})
			if err != nil || code != c.want {
				t.Errorf("Measure = %d, %v; want %d", code, err, c.want)
			}
		})
	}
}
