package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/tools/fileio"
)

func command(args ...string) (*cobra.Command, []string) {
	c := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cli.DurationVarP(c.Flags(), new(time.Duration), "interval", "i", 0, "")
	cli.AddDurationFlag(c.Flags(), new(time.Duration), "tracing")
	c.SetArgs(args)
	var got []string
	c.RunE = func(_ *cobra.Command, a []string) error { got = a; return nil }
	c.Execute()
	return c, got
}

func TestFileArgs(t *testing.T) {
	for _, c := range []struct {
		args     []string
		interval time.Duration
		duration time.Duration
		command  string
	}{
		{nil, time.Second, 0, ""},
		{[]string{"2", "3"}, 2 * time.Second, 6 * time.Second, ""},
		{[]string{"--", "ls", "-l"}, 0, 0, "ls -l"},
		{[]string{"1", "--", "ls"}, time.Second, 0, "ls"},
	} {
		cmd, args := command(c.args...)
		var l cli.Live
		var o fileio.TopOptions
		if err := filetopArgs(cmd, args, &l, &o); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if o.Interval != c.interval || o.Duration != c.duration || strings.Join(o.Command, " ") != c.command {
			t.Errorf("%v: interval %s duration %s command %q", c.args, o.Interval, o.Duration, o.Command)
		}
	}
	cmd, args := command("1", "2", "3")
	if err := filetopArgs(cmd, args, &cli.Live{}, &fileio.TopOptions{}); err == nil {
		t.Error("three numbers accepted")
	}
	for args, want := range map[string]time.Duration{"": 10 * time.Millisecond, "0": 0, "2.5": 2500 * time.Microsecond} {
		var a []string
		if args != "" {
			a = []string{args, "--", "true"}
		}
		cmd, got := command(a...)
		var o fileio.SlowerOptions
		if err := fileslowerArgs(cmd, got, &o); err != nil || o.Min != want {
			t.Errorf("fileslower %q: min %s, %v", args, o.Min, err)
		}
	}
	for _, bad := range [][]string{{"x"}, {"1", "2"}} {
		cmd, got := command(bad...)
		if err := fileslowerArgs(cmd, got, &fileio.SlowerOptions{}); err == nil {
			t.Errorf("MIN_MS %q accepted", bad)
		}
	}
}
