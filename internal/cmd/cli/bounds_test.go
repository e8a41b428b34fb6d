package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestRangesAndConflicts runs a command through Setup's checks: ranges and
// conflicts are refused in one shape before RunE, values in range run.
func TestRangesAndConflicts(t *testing.T) {
	cases := []struct {
		args []string
		want string // "" runs
	}{
		{args: []string{"x"}},
		{args: []string{"x", "-F", "99", "-d", "2", "--pct", "100", "-i", "10ms"}},
		{args: []string{"x", "-F", "0"}, want: "-F/--freq 0: want a positive number"},
		{args: []string{"x", "-d", "0"}, want: "-d/--duration 0s: want a positive duration"},
		{args: []string{"x", "--pct", "100.5"}, want: "--pct 100.5: want 0 to 100"},
		{args: []string{"x", "-i", "5ms"}, want: "-i/--interval 5ms: want at least 10ms"},
		{args: []string{"x", "--top", "-1"}, want: "--top -1: want 0 or more"},
		{args: []string{"x", "-F", "x"}, want: "-F/--freq x: want a whole number"},
		{args: []string{"x", "-U", "-K"}, want: "-U/--user and -K/--kernel conflict: one side"},
		{args: []string{"x", "-K"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			ran := false
			root := &cobra.Command{Use: "sonde"}
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
			f := cmd.Flags()
			var freq uint64
			var d, iv time.Duration
			var pct float64
			var top int
			var u, k bool
			f.Uint64VarP(&freq, "freq", "F", 97, "")
			AddDurationFlag(f, &d, "x")
			DurationVarP(f, &iv, "interval", "i", 0, "")
			f.Float64Var(&pct, "pct", 0, "")
			f.IntVar(&top, "top", 20, "")
			f.BoolVarP(&u, "user", "U", false, "")
			f.BoolVarP(&k, "kernel", "K", false, "")
			AtLeast(f, 1, "freq")
			AtLeast(f, 10*time.Millisecond, "interval")
			Between(f, "pct", 0.0, 100.0)
			AtLeast(f, 0, "top")
			Conflicting(f, "user", "kernel", "one side")
			root.AddCommand(cmd)
			Setup(root)
			root.SetArgs(c.args)
			_, err := root.ExecuteC()
			if c.want == "" {
				if err != nil || !ran {
					t.Fatalf("ran %v, err %v", ran, err)
				}
				return
			}
			var ue UsageError
			if ran || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ran %v, err %v; want a usage error %q", ran, err, c.want)
			}
		})
	}
}
