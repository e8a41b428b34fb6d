package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/sonde-dev/sonde/internal/probe"
)

func runProbe(args []string) (int, error) {
	fs := newFlags("probe", "--add [-x BINARY | -p PID] 'FUNC [ARG[=LOC] …]' | 'FUNC%return $retval' | --list [--json] | --del NAME | --del-all")
	add := fs.Bool("add", false, "create a probe from the spec")
	bin := fs.String("x", "", "binary (executable or library) for user probes")
	pid := fs.Int("p", 0, "probe the executable of this process")
	list := fs.Bool("list", false, "list probes")
	del := fs.String("del", "", "remove a probe (group:event or event)")
	delAll := fs.Bool("del-all", false, "remove every probe sonde created (probe_* and sonde_* groups)")
	asJSON := fs.Bool("json", false, "JSON output for --list")
	if err := parseFlags(fs, args); err != nil {
		return 2, err
	}
	switch {
	case *add:
		if fs.NArg() == 0 {
			return 2, usageError{"--add needs a spec, e.g. 'compute n' or 'compute%return $retval'"}
		}
		binary := *bin
		if *pid != 0 {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", *pid))
			if err != nil {
				return 1, fmt.Errorf("no such process: %d", *pid)
			}
			binary = fmt.Sprintf("/proc/%d/root%s", *pid, exe)
			if _, err := os.Stat(binary); err != nil {
				binary = exe
			}
		}
		p, err := probe.Parse(strings.Join(fs.Args(), " "), binary, "")
		if err != nil {
			return 1, err
		}
		if p.Note != "" {
			fmt.Fprintln(os.Stderr, "sonde: "+p.Note)
		}
		if err := probe.Add(p); err != nil {
			return 1, err
		}
		fmt.Printf("Added probe %s\n  use it with: sonde stat -e %s / sonde record -e %s\n", p.Name(), p.Name(), p.Name())
		return 0, nil
	case *list:
		ps, err := probe.List()
		if err != nil {
			return 1, err
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return 0, enc.Encode(ps)
		}
		for _, p := range ps {
			fmt.Printf("  %-40s (%s)\n", p.Name(), strings.SplitN(p.Definition(), " ", 2)[1])
		}
		return 0, nil
	case *del != "":
		if err := probe.Del(*del); err != nil {
			return 1, err
		}
		fmt.Printf("Removed probe %s\n", *del)
		return 0, nil
	case *delAll:
		ps, err := probe.List()
		if err != nil {
			return 1, err
		}
		n := 0
		for _, p := range ps {
			if strings.HasPrefix(p.Group, "probe_") || strings.HasPrefix(p.Group, "sonde_") || p.Group == "probe" {
				if err := probe.Del(p.Name()); err != nil {
					return 1, err
				}
				n++
			}
		}
		fmt.Printf("Removed %d probes\n", n)
		return 0, nil
	}
	return 2, usageError{"give --add, --list, --del NAME or --del-all"}
}
