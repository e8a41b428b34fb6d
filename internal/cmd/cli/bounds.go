package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The one rule for numeric options: a flag declares its range where it is
// defined (AtLeast, Between), and every command checks the flags given on
// its command line against their ranges before it runs (Setup wires the
// check), with one line naming the flag, the value and the range. A value
// outside the range is never silently replaced by a default: -F 0 is an
// error, not 49 Hz.

// The same holds for options that exclude each other: Conflicting declares
// them with the flags, and the same check names both in one shape, the one
// TargetFlags.Resolve uses for targets: "-a/--all-cpus and -p/--pid
// conflict: choose one target".

// conflictKey is the pflag annotation of a flag listing the flags it
// conflicts with; the last value is why (what to do instead).
const conflictKey = "sonde_conflicts"

// Conflicting declares that flags a and b cannot be given together; why
// says what to do instead.
func Conflicting(fs *pflag.FlagSet, a, b, why string) {
	if fs.Lookup(a) == nil || fs.Lookup(b) == nil {
		panic("cli: no flag --" + a + " or --" + b)
	}
	fs.SetAnnotation(a, conflictKey+"_"+b, []string{why})
}

// CheckConflicts refuses two conflicting flags given together.
func CheckConflicts(cmd *cobra.Command) error {
	var err error
	fs := cmd.Flags()
	fs.Visit(func(f *pflag.Flag) {
		for key, v := range f.Annotations {
			other, ok := strings.CutPrefix(key, conflictKey+"_")
			if !ok || err != nil || len(v) != 1 || !fs.Changed(other) {
				continue
			}
			err = Usagef("%s and %s conflict: %s", flagName(f), flagName(fs.Lookup(other)), v[0])
		}
	})
	return err
}

// boundsKey is the pflag annotation holding a flag's range: min and max as
// float64 text (durations in nanoseconds).
const boundsKey = "sonde_bounds"

// AtLeast declares that the named flags, when given, are at least min
// (numbers, or a time.Duration for duration flags).
func AtLeast[T int | uint64 | float64 | time.Duration](fs *pflag.FlagSet, min T, names ...string) {
	for _, n := range names {
		annotate(fs, n, float64(min), math.Inf(1))
	}
}

// Between declares that the named flag, when given, is within [min, max].
func Between[T int | uint64 | float64 | time.Duration](fs *pflag.FlagSet, name string, min, max T) {
	annotate(fs, name, float64(min), float64(max))
}

func annotate(fs *pflag.FlagSet, name string, min, max float64) {
	if fs.Lookup(name) == nil {
		panic("cli: no flag --" + name) // a programming error, caught by any test that builds the tree
	}
	fs.SetAnnotation(name, boundsKey, []string{strconv.FormatFloat(min, 'g', -1, 64), strconv.FormatFloat(max, 'g', -1, 64)})
}

// durationFlag is what the duration flags' values have in common.
type durationFlag interface{ duration() time.Duration }

func (d *durationValue) duration() time.Duration { return time.Duration(*d) }
func (d *millisValue) duration() time.Duration   { return time.Duration(*d) }

// CheckBounds checks the flags given on cmd's command line against the
// ranges declared for them.
func CheckBounds(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		b := f.Annotations[boundsKey]
		if err != nil || len(b) != 2 {
			return
		}
		lo, _ := strconv.ParseFloat(b[0], 64)
		hi, _ := strconv.ParseFloat(b[1], 64)
		var v float64
		show := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		if d, ok := f.Value.(durationFlag); ok {
			v = float64(d.duration())
			show = func(x float64) string { return time.Duration(x).String() }
		} else if v, err = strconv.ParseFloat(f.Value.String(), 64); err != nil {
			err = fmt.Errorf("checking %s: %w", flagName(f), err)
			return
		}
		if v >= lo && v <= hi {
			return
		}
		given := f.Value.String()
		if _, ok := f.Value.(durationFlag); ok {
			given = time.Duration(v).String()
		}
		switch {
		case math.IsInf(hi, 1) && lo == 1:
			err = Usagef("%s %s: want a positive number", flagName(f), given)
		case math.IsInf(hi, 1) && lo == 0:
			err = Usagef("%s %s: want 0 or more", flagName(f), given)
		case math.IsInf(hi, 1):
			err = Usagef("%s %s: want at least %s", flagName(f), given, show(lo))
		default:
			err = Usagef("%s %s: want %s to %s", flagName(f), given, show(lo), show(hi))
		}
		if _, ok := f.Value.(durationFlag); ok && f.Name == "duration" {
			err = Usagef("%s %s: want a positive duration (leave it out to run until Ctrl-C)", flagName(f), given)
		}
	})
	return err
}

// flagName is a flag as the help shows it: -F/--freq, or --top.
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// checkBoundsFirst makes cmd and every command under it check their flags'
// ranges before they run.
func checkBoundsFirst(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if err := CheckConflicts(c); err != nil {
				return err
			}
			if err := CheckBounds(c); err != nil {
				return err
			}
			if err := takeStdout(c); err != nil {
				return err
			}
			return run(c, args)
		}
	}
	for _, c := range cmd.Commands() {
		checkBoundsFirst(c)
	}
}
