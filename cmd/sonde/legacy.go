package main

// The helpers of the Go-flag command line, for the commands not yet on
// pflag (see bridge); this file goes when the last one moves.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// newFlags makes a FlagSet whose errors come back as one line.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	usageText[fs] = func() {
		fmt.Fprintf(os.Stdout, "usage: sonde %s %s\n\noptions:\n", name, synopsis)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

var usageText = map[*flag.FlagSet]func(){}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if u := usageText[fs]; u != nil {
				u()
			}
			return err
		}
		return usageError{fmt.Sprintf("%v (see sonde %s -h)", err, fs.Name())}
	}
	return nil
}

// parseInterspersed parses flags that may follow positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
