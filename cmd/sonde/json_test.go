package main

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/collect/probe"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/tools/bio"
	"github.com/sonde-dev/sonde/internal/tools/deadlock"
	"github.com/sonde-dev/sonde/internal/tools/fileio"
	"github.com/sonde-dev/sonde/internal/tools/ftrace"
	"github.com/sonde-dev/sonde/internal/tools/memleak"
	"github.com/sonde-dev/sonde/internal/view/annotate"
	"github.com/sonde-dev/sonde/internal/view/blocked"
	"github.com/sonde-dev/sonde/internal/view/cpuusage"
	"github.com/sonde-dev/sonde/internal/view/diff"
	"github.com/sonde-dev/sonde/internal/view/dist"
	"github.com/sonde-dev/sonde/internal/view/eventlist"
	"github.com/sonde-dev/sonde/internal/view/latencyview"
	"github.com/sonde-dev/sonde/internal/view/report"
	"github.com/sonde-dev/sonde/internal/view/script"
	"github.com/sonde-dev/sonde/internal/view/stackprof"
	"github.com/sonde-dev/sonde/internal/view/statview"
	"github.com/sonde-dev/sonde/internal/view/syscounts"
)

// jsonDocs are the types each command writes with --json. Every key they
// can produce must be in the vocabulary that docs/json.md describes.
var jsonDocs = map[string]any{
	"list":                    []eventlist.Event{},
	"record/report":           report.Report{},
	"report (several events)": []report.Report{},
	"script":                  script.Event{},
	"annotate":                []annotate.Func{},
	"diff":                    []diff.Row{},
	"stat":                    statview.Doc{},
	"stat -I":                 statview.Interval{},
	"latency":                 latencyview.Doc{},
	"probe -l":                []probe.Listed{},
	"ftrace report":           ftrace.ReportDoc{},
	// The BPF tools.
	"offcpu, wakeup":  blocked.Report{},
	"profile":         stackprof.Errors{},
	"profile stacks":  stackstat.Completeness{},
	"profile (shell)": jsonout.Run{},
	"funclat":         dist.Functions{},
	"runqlat":         dist.RunQueue{},
	"biolat":          bio.Latency{},
	"biosnoop":        bio.IO{},
	"syscount":        syscounts.Report{},
	"cputime":         cpuusage.Report{},
	"filetop":         fileio.TopReport{},
	"fileslower":      fileio.Slow{},
	"deadlock":        deadlock.Report{},
	"memleak":         memleak.Report{},
}

func TestJSONVocabulary(t *testing.T) {
	for name, v := range jsonDocs {
		if bad := jsonout.Undocumented(v); len(bad) > 0 {
			t.Errorf("%s writes keys missing from the vocabulary (internal/model/jsonout, docs/json.md): %v", name, bad)
		}
	}
}
