// Package commands is sonde's command layer: every command, one file each,
// built one way. A command's file holds its flags, its checks and its run,
// and declares the command once with Register; the root command, the help
// groups, the agent's allow-list, the probe clean-up, the JSON vocabulary
// check and the end-to-end test tables are all derived from that one
// declaration (see docs/adding-a-tool.md).
//
// Tool packages (internal/tools/…) and views (internal/view/…) know
// nothing of cobra: this layer turns flags into their Options, calls their
// Run, and hands the result to a view.
package commands

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/diskcache"
	"github.com/sonde-dev/sonde/internal/collect/probe"
)

// Group is where `sonde --help` lists a command.
type Group string

const (
	Recording Group = "record" // recording, counting, reports
	BPF       Group = "bpf"    // live BPF tools
	Setup     Group = "setup"  // everything else
)

// groups in the order --help shows them.
var groups = []struct {
	id    Group
	title string
}{
	{Recording, "Recording, counting and reports:"},
	{BPF, "Live BPF tools:"},
	{Setup, "Other commands:"},
}

// Spec declares one command.
type Spec struct {
	Name  string
	Group Group
	// New builds the command: its flags, its checks (cobra Args or
	// cli.Live.Check) and its RunE. It is called once per tree (the agent
	// builds a tree per request).
	New func() *cobra.Command
	// Page is its page in docs/ (default NAME.md; commands of the Setup
	// group need none).
	Page string
	// JSON holds a value of each type the command writes with --json:
	// every key they can produce must be in the vocabulary
	// (internal/model/jsonout, docs/json.md).
	JSON []any
	// Keys are the JSON keys of its documents that the shared vocabulary
	// lacks, with their meanings (say the same on its docs page); a key
	// the vocabulary has keeps the vocabulary's meaning.
	Keys map[string]string
	// Remote: an agent runs it for `sonde --remote` (a measuring command
	// whose flags are all classified in internal/cmd/remote).
	Remote bool
	// RunsCommand: its arguments are a program to start, which an agent
	// never takes over the wire.
	RunsCommand bool
	// Probes: it may create uprobes, so it first clears those a sonde
	// killed before its clean-up left behind.
	Probes bool
	// Smoke is a privileged end-to-end run that must exit 0 with output
	// (nil: none). "{work}" stands for a CPU-bound test program.
	Smoke []string
	// BadInput are command lines that must fail with one line naming
	// the cause, before anything is measured.
	BadInput []BadInput
}

// BadInput is one refused command line.
type BadInput struct {
	Name string
	Args []string // after the command's name
	Code int      // the exit status (0: any non-zero)
	Want string   // a regexp on stderr
}

var registry = map[string]Spec{}

// Register declares a command; each command's file calls it once, as
// `var _ = Register(Spec{…})`, so the declaration is one statement.
func Register(s Spec) Spec {
	if _, dup := registry[s.Name]; dup || s.New == nil || s.Group == "" {
		panic(fmt.Sprintf("commands: bad or duplicate registration of %q", s.Name))
	}
	registry[s.Name] = s
	return s
}

// Specs returns every declared command, by name.
func Specs() []Spec {
	out := make([]Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the declaration of a command.
func Lookup(name string) (Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

// version is sonde's version, set by Root.
var version = "dev"

// Root builds the whole command tree of sonde version v; main, the tests,
// `sonde man` and the agent use it.
func Root(v string) *cobra.Command {
	version = v
	return newRoot()
}

func newRoot() *cobra.Command {
	var rc remote.Client
	var noDebuginfod bool
	hook := rc.Hook(func(cmd *cobra.Command) { // --remote: runs there, shows here
		if s, ok := registry[cmd.Name()]; ok && s.Probes {
			if n := probe.CleanStale(); n > 0 {
				fmt.Fprintf(os.Stderr, "sonde: removed %d probes left by a sonde that did not exit cleanly\n", n)
			}
		}
		useDebuginfod(!noDebuginfod)
	})
	root := cli.Doc("sonde", &cobra.Command{
		Version: version,
		Args:    cobra.NoArgs,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := diskcache.CheckEnv(); err != nil {
				return cli.Usagef("%v", err)
			}
			return hook(cmd, args)
		},
	})
	rc.AddFlags(root.PersistentFlags())
	root.PersistentFlags().BoolVar(&noDebuginfod, "no-debuginfod", false, "never ask the debuginfod servers of $DEBUGINFOD_URLS for debug files")
	root.SetVersionTemplate("sonde {{.Version}}\n")
	for _, g := range groups {
		root.AddGroup(&cobra.Group{ID: string(g.id), Title: g.title})
	}
	for _, s := range Specs() {
		c := s.New()
		c.GroupID = string(s.Group)
		if s.Remote {
			mark(c, remote.Offered)
		}
		if s.RunsCommand {
			mark(c, remote.RunsCommand)
		}
		root.AddCommand(c)
	}
	root.AddCommand(withGroup(cli.NewVersionCmd("sonde "+version)), withGroup(cli.NewManCmd(root, "sonde "+version)))
	root.SetHelpCommandGroupID(string(Setup))
	root.SetCompletionCommandGroupID(string(Setup))
	cli.Setup(root)
	return root
}

func withGroup(c *cobra.Command) *cobra.Command {
	c.GroupID = string(Setup)
	return c
}

func mark(c *cobra.Command, key string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = "true"
}
