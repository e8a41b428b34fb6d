package remote

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// An agent runs sonde's measuring commands, and only those the command
// layer marks with these annotations (commands.Spec's Remote and
// RunsCommand). Commands that read data files (report, flamegraph, diff…)
// run on the workstation, on the files a remote run brought back; probe
// (lasting probes), top (a terminal UI) and listen (a server) are not
// offered.
const (
	// Offered marks a command an agent runs.
	Offered = "sonde.remote"
	// RunsCommand marks a command whose arguments are a program to start
	// on the target: over the wire that would be running code, so they take
	// none.
	RunsCommand = "sonde.runs-command"
)

// offered reports whether the agent runs cmd.
func offered(cmd *cobra.Command) bool { return cmd.Annotations[Offered] == "true" }

// flagKind says what a flag may carry over the wire.
type flagKind int

const (
	flagValue   flagKind = iota + 1 // a value that names no file: numbers, filters, names
	flagOutput                      // a file the command writes: kept in the run's directory, sent back
	flagRefused                     // reads or sends somewhere on the target, or is the client's own
)

// flags classifies every flag of the allowed commands; a flag missing here
// is refused, so a new flag is only offered remotely once someone decided it
// is safe (TestRemoteFlagsClassified lists the ones still undecided).
var flags = map[string]flagKind{
	"output": flagOutput, "flamegraph": flagOutput,
	"input": flagRefused, "stream": flagRefused, "remote": flagRefused, "token-file": flagRefused,
	"tls-ca": flagRefused, "tls-cert": flagRefused, "tls-key": flagRefused,
	"web": flagRefused, // serves a page on the target: the client's own

	"all-cpus": flagValue, "binary": flagValue, "cgroup": flagValue, "no-debuginfod": flagValue, "call-graph": flagValue, "callchain": flagValue,
	"comm": flagValue, "compare-sampled": flagValue, "count": flagValue, "cpu": flagValue,
	"disks": flagValue, "duration": flagValue, "end": flagValue, "event": flagValue, "events": flagValue,
	"field-separator": flagValue, "filter": flagValue, "folded": flagValue, "freq": flagValue,
	"idle": flagValue, "interval": flagValue, "interval-print": flagValue, "json": flagValue,
	"kernel": flagValue, "key": flagValue, "latency": flagValue, "linear": flagValue,
	"max-block": flagValue, "min-block": flagValue, "mmap-pages": flagValue, "no-interp": flagValue, "per": flagValue,
	"per-cpu": flagValue, "per-process": flagValue, "per-thread": flagValue, "pid": flagValue,
	"pids": flagValue, "queued": flagValue, "quiet": flagValue, "repeat": flagValue,
	"stages": flagValue, "start": flagValue, "state": flagValue, "tid": flagValue, "tids": flagValue,
	"top": flagValue, "unit": flagValue, "user": flagValue,
}

// Plan is a validated command line, ready to run in a run's directory.
type Plan struct {
	Args []string // the command line, rebuilt from what was parsed
	// Outputs maps an output flag to the file name it was given in the
	// run's directory.
	Outputs map[string]string
}

// safeName is an output file name kept as the client gave it (its base),
// so that messages name the file the user asked for; the extension matters
// too (flamegraph -o x.svg picks SVG).
var (
	safeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}$`)
	safeExt  = regexp.MustCompile(`^\.[A-Za-z0-9]{1,8}$`)
)

// outputName is the name in the run's directory for an output flag's
// value: its base name when that is plain and not taken, else the flag's
// name with the value's extension.
func outputName(flag, value string, taken map[string]string) string {
	name := filepath.Base(value)
	for _, t := range taken {
		if t == name {
			name = ""
		}
	}
	if !safeName.MatchString(name) {
		name = flag
		if ext := filepath.Ext(value); safeExt.MatchString(ext) {
			name += ext
		}
	}
	return name
}

// Validate parses args with the same command tree the agent's sonde has and
// rebuilds them from what was parsed, so nothing unparsed reaches the
// command: an allowed command, classified flags only, no paths in values
// or arguments, output files renamed into the run's directory.
func Validate(root *cobra.Command, args []string) (*Plan, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("empty command line")
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root || cmd.Parent() != root {
		return nil, fmt.Errorf("unknown command %q", args[0])
	}
	if !offered(cmd) {
		return nil, fmt.Errorf("%s does not run through the agent (it offers %s)", cmd.Name(), strings.Join(commandList(root), ", "))
	}
	fs := cmd.Flags()
	fs.SetOutput(discard{})
	if err := fs.Parse(rest); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd.Name(), err)
	}
	plan := &Plan{Args: []string{cmd.Name()}, Outputs: map[string]string{}}
	var bad error
	fs.VisitAll(func(f *pflag.Flag) {
		if bad != nil {
			return
		}
		kind := kindOf(f)
		if kind == flagOutput {
			v := f.Value.String()
			if v == "" || v == "-" {
				if f.Changed {
					plan.Args = append(plan.Args, "--"+f.Name+"="+v)
				}
				return
			}
			name := outputName(f.Name, v, plan.Outputs)
			plan.Outputs[f.Name] = name
			plan.Args = append(plan.Args, "--"+f.Name+"="+name)
			return
		}
		if !f.Changed {
			return
		}
		switch kind {
		case flagRefused:
			bad = fmt.Errorf("%s --%s is not offered remotely", cmd.Name(), f.Name)
			return
		case 0:
			bad = fmt.Errorf("%s --%s is not offered remotely (not yet reviewed for the agent)", cmd.Name(), f.Name)
			return
		}
		for _, v := range flagValues(f) {
			if err := noPath(v); err != nil {
				bad = fmt.Errorf("%s --%s %q: %w", cmd.Name(), f.Name, v, err)
				return
			}
			plan.Args = append(plan.Args, "--"+f.Name+"="+v)
		}
	})
	if bad != nil {
		return nil, bad
	}
	pos := fs.Args()
	if len(pos) > 0 && cmd.Annotations[RunsCommand] == "true" && !bareDuration(pos) {
		return nil, fmt.Errorf("%s %s: the agent starts no programs; give -p PID or -a (and --duration)", cmd.Name(), strings.Join(pos, " "))
	}
	for _, a := range pos {
		if strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("%s: argument %q looks like an option", cmd.Name(), a)
		}
		if err := noPath(a); err != nil {
			return nil, fmt.Errorf("%s argument %q: %w", cmd.Name(), a, err)
		}
	}
	plan.Args = append(plan.Args, pos...)
	return plan, nil
}

// bareDuration says whether the positional arguments are one duration
// (`profile 5`, `offcpu 500ms`): a tool that takes a command or a bare
// duration is then given the duration, never a program to start.
func bareDuration(pos []string) bool {
	if len(pos) != 1 {
		return false
	}
	if _, err := strconv.ParseFloat(pos[0], 64); err == nil {
		return true
	}
	_, err := time.ParseDuration(pos[0])
	return err == nil
}

// noPath refuses values that name files on the target: the agent takes
// names (libc:getaddrinfo, a comm, an event), never paths.
func noPath(v string) error {
	if strings.ContainsAny(v, "/\\\x00") || strings.HasPrefix(v, "~") || v == ".." {
		return fmt.Errorf("paths are not taken over the wire")
	}
	return nil
}

// commandList names the commands of root an agent runs.
func commandList(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if offered(c) {
			names = append(names, c.Name())
		}
	}
	return slices.Sorted(slices.Values(names))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// flagValues is what to give --NAME=… (once per value) so that parsing it
// again sets the flag as it is: a list flag's elements one by one.
func flagValues(f *pflag.Flag) []string {
	if s, ok := f.Value.(pflag.SliceValue); ok {
		return s.GetSlice()
	}
	return []string{f.Value.String()}
}

// valueAnnotation marks a flag its command declared safe to carry over the
// wire as a value (MarkValues): a command adds its own flags there, in its
// own file, rather than in the table above.
const valueAnnotation = "sonde.remote-value"

// MarkValues declares flags of a command as values that name no file
// (numbers, filters, names), safe for an agent to take.
func MarkValues(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.SetAnnotation(n, valueAnnotation, []string{"true"}); err != nil {
			panic(fmt.Sprintf("remote.MarkValues: %v", err)) // a command naming a flag it lacks
		}
	}
}

// kindOf is what f may carry over the wire: the table's word, or its
// command's (MarkValues); 0 when nobody decided.
func kindOf(f *pflag.Flag) flagKind {
	if k := flags[f.Name]; k != 0 {
		return k
	}
	if len(f.Annotations[valueAnnotation]) > 0 {
		return flagValue
	}
	return 0
}

// Classified reports whether someone decided what flag f may carry over
// the wire (a value, an output file, or refused).
func Classified(f *pflag.Flag) bool { return kindOf(f) != 0 }
