package ftrace

import (
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/cli"
)

// AddFlags adds record's flags (uftrace's letters where it has them).
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringArrayVarP(&o.Include, "filter", "F", nil, "trace functions matching this glob (lib:glob for a library; default every function)")
	f.StringArrayVarP(&o.Exclude, "notrace", "N", nil, "do not trace functions matching this glob")
	f.IntVarP(&o.Depth, "depth", "D", 0, "record calls nested at most this deep (0: all)")
	cli.DurationVarP(f, &o.MinDuration, "time-filter", "t", 0, "record only calls lasting at least this (100us, 2ms)")
	f.StringArrayVarP(&o.Args, "argument", "A", nil, "FUNC@arg1,arg2 or FUNC@name: record integer arguments (uprobes)")
	f.StringArrayVarP(&o.Rets, "retval", "R", nil, "FUNC@retval: record the return value (uprobes)")
	f.IntVarP(&o.Pid, "pid", "p", 0, "attach to this running process (uprobes)")
	f.StringVarP(&o.Output, "output", "o", "ftrace.data", "data file to write")
	f.StringVar(&o.Mechanism, "mechanism", "auto", "auto, uprobe, or preload (in-process, for -finstrument-functions builds)")
	cli.AddDurationFlag(f, &o.Duration, "recording")
	cli.AtLeast(f, 0, "depth")
}

// AddFlags adds the views' shared flags.
func (v *ViewOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVarP(&v.Input, "input", "i", "ftrace.data", "data file to read")
	cli.DurationVarP(f, &v.MinDuration, "time-filter", "t", 0, "hide calls shorter than this")
	f.IntVarP(&v.Depth, "depth", "D", 0, "hide calls nested deeper than this (0: none)")
	f.IntVar(&v.Tid, "tid", 0, "this thread only")
}
