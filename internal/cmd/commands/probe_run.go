package commands

import (
	"fmt"
	"os"
	"strings"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/collect/probe"
)

// Probe is `sonde probe`'s command line: its flags fill the fields, Run
// adds, lists or removes probes.
type Probe struct {
	Add, List, DelAll, JSON bool
	Binary, Del             string
	Pid                     int
}

// Run does what the flags ask; args are the spec of a probe to add.
func (p *Probe) Run(args []string) error {
	switch {
	case p.Add:
		if len(args) == 0 {
			return cli.Usagef("--add needs a spec, e.g. 'compute n' or 'compute%%return $retval'")
		}
		if p.Pid != 0 {
			if err := cli.CheckPid(p.Pid); err != nil {
				return err
			}
			var err error
			if p.Binary, err = probe.ExecOf(p.Pid); err != nil {
				return err
			}
		}
		pr, err := probe.Parse(strings.Join(args, " "), p.Binary, "")
		if err != nil {
			return err
		}
		if pr.Note != "" {
			fmt.Fprintln(os.Stderr, "sonde: "+pr.Note)
		}
		if err := probe.Add(pr); err != nil {
			return err
		}
		fmt.Printf("Added probe %s\n  use it with: sonde stat -e %s / sonde record -e %s\n", pr.Name(), pr.Name(), pr.Name())
	case p.List:
		ps, err := probe.List()
		if err != nil {
			return err
		}
		return probe.WriteList(os.Stdout, ps, p.JSON)
	case p.Del != "":
		if err := probe.Del(p.Del); err != nil {
			return err
		}
		fmt.Printf("Removed probe %s\n", p.Del)
	case p.DelAll:
		n, err := probe.DelOwn()
		fmt.Printf("Removed %d probes\n", n)
		return err
	default:
		return cli.Usagef("give -a/--add SPEC, -l/--list, -d/--del NAME or --del-all")
	}
	return nil
}
