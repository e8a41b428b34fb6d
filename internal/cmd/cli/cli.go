// Package cli is sonde's command-line conventions on cobra and pflag, as
// perf and bcc users expect them: perf's target options (-a, -p, -t, -C and
// a trailing command), durations in bare seconds or Go form, -F/-c,
// -g/--call-graph, -e/--filter; bad command lines as one line that says
// the fix, with exit status 2; the traced command's status passed through.
package cli

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/runctl"
)

// UsageError marks a bad command line (exit status 2); ExitStatus ends
// sonde with a traced command's status. They live in runctl so that the
// packages below the command layer can return them too.
type (
	UsageError = runctl.UsageError
	ExitStatus = runctl.ExitStatus
)

// Usagef makes a UsageError.
func Usagef(format string, a ...any) error { return runctl.Usagef(format, a...) }

// ExitWith is nil for status 0.
func ExitWith(code int) error { return runctl.ExitWith(code) }

// Setup makes root print errors once, in Execute, and usage only for -h,
// and adds help and completion now (cobra would at Execute) so that the
// unknown-command check and the man pages see them.
func Setup(root *cobra.Command) {
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetFlagErrorFunc(FlagError)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	argsAreUsage(root)
	checkBoundsFirst(root)
	registerCompletions(root)
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Short = "help about any command: " + root.Name() + " help record"
		case "completion":
			c.Short = "write the shell completion script: " + root.Name() + " completion bash|zsh|fish"
		}
	}
}

// argsAreUsage makes cobra's argument-count errors usage errors too (exit
// status 2, a pointer to -h), in cmd and every command under it.
func argsAreUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			if err == nil || errors.As(err, new(UsageError)) {
				return err
			}
			return Usagef("%v (see %s -h)", err, c.CommandPath())
		}
	}
	for _, c := range cmd.Commands() {
		argsAreUsage(c)
	}
}

// Execute runs one command line and returns the exit status: 0, the
// traced command's status, 1 for failures, 2 for bad command lines. Errors
// are printed as one line, "sonde CMD: what went wrong".
func Execute(root *cobra.Command, args []string) int {
	if len(args) == 0 {
		root.SetOut(os.Stderr)
		root.Help()
		return 2
	}
	word := args[0]
	if word == "help" && len(args) > 1 {
		word = args[1]
	}
	if err := unknownCommand(root, word); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", root.Name(), err)
		return 2
	}
	if err := unknownSubcommand(root, args); err != nil {
		fmt.Fprintln(os.Stderr, err) // it names the command
		return 2
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ex ExitStatus
	if errors.As(err, &ex) {
		return int(ex)
	}
	name := root.Name()
	if cmd != nil && cmd != root {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// unknownCommand explains, in one line, a first word that names no command.
func unknownCommand(root *cobra.Command, name string) error {
	if strings.HasPrefix(name, "-") || name == cobra.ShellCompRequestCmd || name == cobra.ShellCompNoDescRequestCmd {
		return nil
	}
	var names []string
	for _, c := range root.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return nil
		}
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("unknown command %q%s (%s help lists the commands)", name, didYouMean(name, names, ""), root.Name())
}

// didYouMean suggests the names close to a misspelt one: a prefix, or a
// few edits away.
func didYouMean(name string, names []string, prefix string) string {
	var near []string
	for _, n := range names {
		if d := perf.Distance(name, n); strings.HasPrefix(n, name) || d <= 1+len(name)/4 {
			near = append(near, prefix+n)
		}
	}
	if len(near) == 0 || len(near) > 3 {
		return ""
	}
	sort.Strings(near)
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// unknownSubcommand explains a word after a command that only groups
// others (completion tcsh): cobra would print help and succeed.
func unknownSubcommand(root *cobra.Command, args []string) error {
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root || cmd.Runnable() || len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("%s: unknown argument %q; choose one of %s", cmd.CommandPath(), rest[0], strings.Join(names, ", "))
}

var (
	unknownFlag = regexp.MustCompile(`^unknown flag: --(\S+)`)
	// badValue is pflag's message for a value its type rejects.
	badValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-(\S), )?--(\S+)" flag: (.*)$`)
)

// valueWants says, per pflag type, what a value must look like, in place
// of strconv's messages.
var valueWants = map[string]string{
	"int": "want a whole number", "uint": "want a whole number, 0 or more", "uint64": "want a whole number, 0 or more",
	"float64": "want a number", "bool": "want true or false", "intSlice": "want comma-separated whole numbers",
}

// FlagError turns pflag's parse errors into one line with the fix: the
// nearest flag for a misspelt one, and where to read the options.
func FlagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if m := unknownFlag.FindStringSubmatch(msg); m != nil {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				names = append(names, f.Name)
			}
		})
		msg += didYouMean(m[1], names, "--")
	} else if m := badValue.FindStringSubmatch(msg); m != nil {
		// One shape for every bad value: -F/--freq x: want a whole number.
		name, why := "--"+m[3], m[4]
		if m[2] != "" {
			name = "-" + m[2] + "/" + name
		}
		if f := cmd.Flags().Lookup(m[3]); f != nil && strings.Contains(why, "strconv.") {
			if w, ok := valueWants[f.Value.Type()]; ok {
				why = w
			}
		}
		msg = fmt.Sprintf("%s %s: %s", name, m[1], why)
	}
	return Usagef("%s (see %s -h)", msg, cmd.CommandPath())
}

// AcceptsCommand makes cmd take a command to run after its options, as
// perf record and perf stat do: option parsing stops at the first word
// that is not an option, so the command's own options stay its own
// (`sonde record -g ls -l`); `--` may also separate them.
func AcceptsCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().SetInterspersed(false)
	cmd.Args = cobra.ArbitraryArgs
	return cmd
}

// IsTerminal reports whether fd is a terminal (progress goes only there).
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// IntervalCount reads vmstat's positional INTERVAL [COUNT] (`cputime 1 5`)
// into interval and count, refusing them when the flags of those names
// were given as well.
func IntervalCount(cmd *cobra.Command, args []string, interval *time.Duration, count *int) error {
	if len(args) > 0 {
		iv, err := ParseDuration(args[0])
		if err != nil || cmd.Flags().Changed("interval") {
			return Usagef("interval %q: want seconds (1) or a duration (500ms), once", args[0])
		}
		*interval = iv
	}
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		if err != nil || n <= 0 || cmd.Flags().Changed("count") {
			return Usagef("count %q: want a positive number of reports, once", args[1])
		}
		*count = n
	}
	return nil
}
