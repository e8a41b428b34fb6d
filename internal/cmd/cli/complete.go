package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/collect/perf"
	"github.com/sonde-dev/sonde/internal/collect/tracefs"
)

// choicesKey and choicesListKey are the pflag annotations holding the
// values a flag takes, for shell completion; the second marks a comma list
// of them (-s comm,dso).
const (
	choicesKey     = "sonde_choices"
	choicesListKey = "sonde_choices_list"
)

// Choices declares the values of a flag for shell completion; list says it
// takes a comma list of them. The flag's own checks stay where they are:
// this only helps a user type them.
func Choices(fs *pflag.FlagSet, name string, list bool, values ...string) {
	if fs.Lookup(name) == nil {
		panic("cli: no flag --" + name)
	}
	key := choicesKey
	if list {
		key = choicesListKey
	}
	fs.SetAnnotation(name, key, values)
}

// registerCompletions makes the shell complete, in cmd and every command
// under it, the values declared with Choices and the events of -e/--event:
// perf's generic events, tracepoint subsystems and, after "subsystem:",
// this machine's tracepoints (as sonde list shows them).
func registerCompletions(cmd *cobra.Command) {
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		var fn cobra.CompletionFunc
		switch {
		case f.Name == "event":
			fn = completeEvents
		case len(f.Annotations[choicesKey]) > 0:
			values := f.Annotations[choicesKey]
			fn = func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
				var out []string
				for _, v := range values {
					if strings.HasPrefix(v, typed) {
						out = append(out, v)
					}
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
		case len(f.Annotations[choicesListKey]) > 0:
			values := f.Annotations[choicesListKey]
			fn = func(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return listCompletions(typed, values), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
			}
		}
		if fn != nil {
			// An error means the flag has its completion already.
			_ = cmd.RegisterFlagCompletionFunc(f.Name, fn)
		}
	})
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}

// listCompletions completes the last element of a comma list: what was
// typed before it stays, values already in the list are not offered again.
func listCompletions(typed string, values []string) []string {
	done, cur := "", typed
	if i := strings.LastIndexByte(typed, ','); i >= 0 {
		done, cur = typed[:i+1], typed[i+1:]
	}
	have := strings.Split(done, ",")
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, cur) && !slices.Contains(have, v) {
			out = append(out, done+v)
		}
	}
	return out
}

// completeEvents offers events for the element of -e's comma list being
// typed.
func completeEvents(_ *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
	done, cur := "", typed
	if i := strings.LastIndexByte(typed, ','); i >= 0 {
		done, cur = typed[:i+1], typed[i+1:]
	}
	tps, _ := tracefs.Events() // unreadable without privileges: generic events only
	var out []string
	if strings.Contains(cur, ":") {
		for _, tp := range tps {
			if strings.HasPrefix(tp, cur) {
				out = append(out, done+tp)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	for _, n := range perf.Names() {
		if strings.HasPrefix(n, cur) {
			out = append(out, done+n)
		}
	}
	// Subsystems, to be continued with a tracepoint's name (no space).
	seen := map[string]bool{}
	for _, tp := range tps {
		sys, _, _ := strings.Cut(tp, ":")
		if strings.HasPrefix(sys, cur) && !seen[sys] {
			seen[sys] = true
			out = append(out, done+sys+":")
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
