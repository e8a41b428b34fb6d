package main

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/annotate"
	"github.com/sonde-dev/sonde/internal/diff"
	"github.com/sonde-dev/sonde/internal/ftrace"
	"github.com/sonde-dev/sonde/internal/probe"
	"github.com/sonde-dev/sonde/internal/report"
	"github.com/sonde-dev/sonde/internal/view/eventlist"
	"github.com/sonde-dev/sonde/internal/view/jsonout"
	"github.com/sonde-dev/sonde/internal/view/latencyview"
	"github.com/sonde-dev/sonde/internal/view/script"
	"github.com/sonde-dev/sonde/internal/view/statview"
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
}

func TestJSONVocabulary(t *testing.T) {
	for name, v := range jsonDocs {
		if bad := jsonout.Undocumented(v); len(bad) > 0 {
			t.Errorf("%s writes keys missing from the vocabulary (internal/view/jsonout, docs/json.md): %v", name, bad)
		}
	}
}
