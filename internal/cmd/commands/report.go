package commands

import (
	"net/url"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
	"github.com/sonde-dev/sonde/internal/format/outfile"
	"github.com/sonde-dev/sonde/internal/format/pprofout"
	"github.com/sonde-dev/sonde/internal/service/load"
	"github.com/sonde-dev/sonde/internal/service/web"
	"github.com/sonde-dev/sonde/internal/view/report"
)

func newReportCmd() *cobra.Command {
	var (
		input, sortKeys, graph, format, output string
		comm, pid, tid, dso, sym               string
		children, noChildren, asJSON, webView  bool
		limit                                  float64
	)
	cmd := cli.Doc("report", &cobra.Command{
		Args: cobra.MaximumNArgs(1),
	})
	f := cmd.Flags()
	f.StringVarP(&input, "input", "i", "sonde.data", inputHelp)
	f.StringVarP(&sortKeys, "sort", "s", "", "group by these keys: comm,pid,tid,dso,sym,cpu,srcline or tracepoint fields (default comm,dso,sym)")
	cli.Choices(f, "sort", true, "comm", "pid", "tid", "dso", "sym", "cpu", "srcline")
	f.BoolVar(&children, "children", false, "add callees' time to callers (default with call chains)")
	f.BoolVar(&noChildren, "no-children", false, "self time only")
	f.StringVarP(&graph, "call-graph", "g", "caller,0.5", "call graph: caller|callee|none[,MIN%]; -g alone: caller,0.5")
	f.Lookup("call-graph").NoOptDefVal = "caller,0.5"
	f.StringVar(&comm, "comm", "", "only these commands (comma-separated)")
	f.StringVar(&pid, "pid", "", "only these pids")
	f.StringVar(&tid, "tid", "", "only these tids")
	f.StringVar(&dso, "dso", "", "only these objects (base names)")
	f.StringVar(&sym, "sym", "", "only these symbols")
	f.Float64Var(&limit, "percent-limit", 0, "hide entries below this percent")
	cli.Between(f, "percent-limit", 0.0, 100.0)
	f.Bool("stdio", true, "plain text output (the only mode; accepted for perf compatibility)")
	cli.AddJSONFlag(f, &asJSON)
	f.StringVar(&format, "format", "text", "text, json or pprof")
	f.StringVarP(&output, "output", "o", "", "output file (required for pprof; default stdout)")
	f.BoolVar(&webView, "web", false, "show the recording in the browser instead (as sonde serve -i FILE)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			// -g takes its argument attached (-gcallee, -g=callee) as perf
			// does; a separate one (-g callee) arrives here.
			if !cmd.Flags().Changed("call-graph") {
				return cli.Usagef("unexpected argument %q (the data file goes after -i)", args[0])
			}
			graph = args[0]
		}
		if webView {
			return reportWeb(input, comm, pid, tid, dso, sym)
		}
		if asJSON {
			format = "json"
		}
		if format != "text" && format != "json" && format != "pprof" {
			return cli.Usagef("--format %q: want text, json or pprof", format)
		}
		keys, err := report.ParseSort(sortKeys)
		if err != nil {
			return cli.Usagef("%v", err)
		}
		o := report.Options{Sort: keys, Children: !noChildren || children, PercentLimit: limit}
		if o.Graph, o.GraphMin, err = report.ParseGraph(graph); err != nil {
			return cli.Usagef("-g %v", err)
		}
		if err := ReportFilters(&o, comm, dso, sym, pid, tid); err != nil {
			return err
		}
		if format == "pprof" && output == "" {
			return cli.Usagef("--format pprof needs -o FILE.pb.gz")
		}
		if format == "pprof" && output == "-" && outfile.StdoutIsTerminal() {
			return cli.Usagef("-o -: standard output is a terminal, and a pprof profile is binary: send it to a file or a pipe")
		}
		if format == "pprof" && (dso != "" || sym != "") {
			// They choose report entries, not samples: a pprof file keeps
			// whole stacks (pprof's -focus and -show do what they do).
			return cli.Usagef("--dso and --sym choose report entries, not samples: a pprof profile keeps whole stacks (use pprof's -focus or -show)")
		}
		prof, err := load.ForReport(input, keys)
		if err != nil {
			return err
		}
		out, err := cli.Create(output)
		if err != nil {
			return err
		}
		if format == "pprof" {
			// The one filter pass of the text and JSON reports: pprof gets
			// the same samples.
			return out.Finish(pprofout.Write(out, prof.Only(o.Tasks)))
		}
		return out.Finish(report.WriteAll(out, report.BuildEach(prof, o), format == "json"))
	}
	return cmd
}

// reportWeb is report --web: the recording in the browser, with the
// --comm, --pid and --tid filters in the page's address (the web view
// filters every view by them); --dso and --sym have no counterpart there.
func reportWeb(input, comm, pid, tid, dso, sym string) error {
	if dso != "" || sym != "" {
		return cli.Usagef("--web: --dso and --sym choose report entries; the web view hides objects and focuses functions in the page instead")
	}
	q := url.Values{}
	for k, v := range map[string]string{"comm": comm, "pid": pid, "tid": tid} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return web.Serve([]string{input}, web.Options{Fragment: q.Encode()})
}

var _ = Register(Spec{Name: "report", Group: Recording, New: newReportCmd, JSON: []any{report.Report{}, []report.Report{}}})
