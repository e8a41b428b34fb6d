package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/probe"
)

func newProbeCmd() *cobra.Command {
	var (
		add, list, delAll, asJSON bool
		bin, del                  string
		pid                       int
	)
	cmd := &cobra.Command{
		Use:   "probe [flags] -a SPEC | -l | -d NAME | --del-all",
		Short: "add, list and remove dynamic probes (uprobes; kprobes where the kernel has them)",
		Long: "Manage dynamic probes as perf probe does. A SPEC is 'FUNC [ARG[=LOC] …]' or\n" +
			"'FUNC%return $retval'; the probe is then an event for stat -e and record -e.",
		Example: "  sonde probe -x ./myprog -a 'compute n'\n  sonde probe -x ./myprog -a 'compute%return $retval'\n" +
			"  sonde probe -l\n  sonde probe -d probe_myprog:compute",
	}
	f := cmd.Flags()
	f.BoolVarP(&add, "add", "a", false, "create a probe from the spec")
	f.StringVarP(&bin, "exec", "x", "", "binary (executable or library) for user probes")
	f.IntVarP(&pid, "pid", "p", 0, "probe the executable of this process")
	f.BoolVarP(&list, "list", "l", false, "list probes")
	f.StringVarP(&del, "del", "d", "", "remove a probe (group:event or event)")
	f.BoolVar(&delAll, "del-all", false, "remove every probe sonde created (probe_* and sonde_* groups)")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case add:
			if len(args) == 0 {
				return usagef("--add needs a spec, e.g. 'compute n' or 'compute%%return $retval'")
			}
			if pid != 0 {
				var err error
				if bin, err = probe.ExecOf(pid); err != nil {
					return err
				}
			}
			p, err := probe.Parse(strings.Join(args, " "), bin, "")
			if err != nil {
				return err
			}
			if p.Note != "" {
				fmt.Fprintln(os.Stderr, "sonde: "+p.Note)
			}
			if err := probe.Add(p); err != nil {
				return err
			}
			fmt.Printf("Added probe %s\n  use it with: sonde stat -e %s / sonde record -e %s\n", p.Name(), p.Name(), p.Name())
		case list:
			ps, err := probe.List()
			if err != nil {
				return err
			}
			return probe.WriteList(os.Stdout, ps, asJSON)
		case del != "":
			if err := probe.Del(del); err != nil {
				return err
			}
			fmt.Printf("Removed probe %s\n", del)
		case delAll:
			n, err := probe.DelOwn()
			fmt.Printf("Removed %d probes\n", n)
			return err
		default:
			return usagef("give -a/--add SPEC, -l/--list, -d/--del NAME or --del-all")
		}
		return nil
	}
	return cmd
}
