package main

import "github.com/sonde-dev/sonde/internal/cli"

// Short names for the command-line conventions in internal/cli, as the
// command files use them.
type (
	target      = cli.Target
	targetFlags = cli.TargetFlags
)

var (
	usagef          = cli.Usagef
	exitWith        = cli.ExitWith
	parseDuration   = cli.ParseDuration
	durationVarP    = cli.DurationVarP
	addDurationFlag = cli.AddDurationFlag
	addJSONFlag     = cli.AddJSONFlag
	acceptsCommand  = cli.AcceptsCommand
	isTerminal      = cli.IsTerminal
	splitList       = cli.SplitList
)
