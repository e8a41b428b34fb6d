package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ParseDuration accepts a Go duration (1m30s, 500ms) or bare seconds as
// bcc and perf take them (5, 0.5).
func ParseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative: want seconds (5) or a duration (500ms, 1m30s)")
		}
		if f != f || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("too long: at most %s", time.Duration(math.MaxInt64).Round(time.Hour))
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want seconds (5) or a duration (500ms, 1m30s)")
	}
	if d < 0 {
		return 0, fmt.Errorf("negative: want seconds (5) or a duration (500ms, 1m30s)")
	}
	return d, nil
}

// durationValue is a pflag.Value for ParseDuration.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	*d = durationValue(v)
	return err
}

func (d *durationValue) Type() string { return "duration" }

func (d *durationValue) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

// DurationVarP defines a duration flag that also takes bare seconds.
func DurationVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	fs.VarP((*durationValue)(p), name, short, usage)
}

// millisValue reads perf stat's -I: bare numbers are milliseconds.
type millisValue time.Duration

func (d *millisValue) Set(s string) error {
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		*d = millisValue(time.Duration(v) * time.Millisecond)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("want milliseconds (1000) or a duration (1s), 0 or more")
	}
	*d = millisValue(v)
	return nil
}

func (d *millisValue) Type() string { return "ms" }

func (d *millisValue) String() string { return (*durationValue)(d).String() }

// MillisVarP defines a duration flag whose bare numbers are milliseconds.
func MillisVarP(fs *pflag.FlagSet, p *time.Duration, name, short string, usage string) {
	fs.VarP((*millisValue)(p), name, short, usage)
}

// AddDurationFlag is the common -d/--duration: how long to measure.
func AddDurationFlag(fs *pflag.FlagSet, p *time.Duration, what string) {
	DurationVarP(fs, p, "duration", "d", 0, "stop "+what+" after this long: seconds (5) or a duration (500ms, 1m)")
	AtLeast(fs, time.Nanosecond, "duration")
}

// AddJSONFlag is the common --json (keys in docs/json.md).
func AddJSONFlag(fs *pflag.FlagSet, p *bool) {
	fs.BoolVar(p, "json", false, "write JSON (keys described in docs/json.md)")
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseIDs parses comma-separated positive ids (pids, tids).
func ParseIDs(s, flagName string) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			return nil, Usagef("%s %q: want comma-separated positive ids", flagName, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// JoinInts is the inverse of ParseIDs.
func JoinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
