package commands

import (
	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/view/report"
)

// ReportFilters fills o's filters from perf report's list options
// (--comms, --dsos, --sym, --pid, --tid: comma-separated).
func ReportFilters(o *report.Options, comm, dso, sym, pid, tid string) error {
	o.Tasks.Comms, o.DSOs, o.Syms = cli.SplitList(comm), cli.SplitList(dso), cli.SplitList(sym)
	var err error
	if o.Tasks.Pids, err = cli.ParseIDs(pid, "--pid"); err != nil {
		return err
	}
	o.Tasks.Tids, err = cli.ParseIDs(tid, "--tid")
	return err
}
