package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/bio"
	"github.com/sonde-dev/sonde/internal/histogram"
	"github.com/sonde-dev/sonde/internal/view/dist"
)

func newBiolatCmd() *cobra.Command {
	var (
		queued, perDisk, stages, asJSON bool
		unitName                        string
		linear                          uint64
		duration                        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "biolat [flags] [DURATION]",
		Short: "block I/O latency distributions per disk, with queued and device stages (BPF)",
		Long: "Pair block requests in the kernel by (dev, sector) and show how long they took, as\n" +
			"bcc's biolatency does: at the device (issue → complete), with -Q from the insert, or\n" +
			"both stages apart with --stages.",
		Example: "  sonde biolat 10\n  sonde biolat -QD -d 5\n  sonde biolat --stages -u ms 10",
	}
	f := cmd.Flags()
	f.BoolVarP(&queued, "queued", "Q", false, "include the time queued in the kernel (insert → complete)")
	f.BoolVarP(&perDisk, "disks", "D", false, "one distribution per disk")
	f.BoolVar(&stages, "stages", false, "split queued (insert → issue) from device (issue → complete) time")
	f.StringVarP(&unitName, "unit", "u", "us", "histogram unit: ns, us, ms or s")
	f.Uint64Var(&linear, "linear", 0, "linear buckets of this width (in --unit) instead of powers of two")
	addDurationFlag(f, &duration, "tracing")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := durationArg(cmd, args, &duration); err != nil {
			return err
		}
		unit, err := histogram.ParseUnit(unitName)
		if err != nil {
			return usagef("-u/--unit: %v", err)
		}
		list := []bio.Stage{bio.Device}
		switch {
		case stages:
			list = []bio.Stage{bio.Queued, bio.Device}
		case queued:
			list = []bio.Stage{bio.Total}
		}
		o := bio.Options{Duration: duration}
		if perDisk {
			o.Per = "dev"
		}
		progress("tracing block I/O latency, %s", forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		res, err := bio.Run(ctx, list, o)
		if err != nil {
			return err
		}
		return writeView(stdout(), bio.NewLatency(dist.Options{Unit: unit, Linear: linear}, list, res), asJSON)
	}
	return cmd
}

func newBiosnoopCmd() *cobra.Command {
	var (
		pid      int
		comm     string
		asJSON   bool
		duration time.Duration
	)
	cmd := &cobra.Command{
		Use:   "biosnoop [flags] [DURATION]",
		Short: "one line per block I/O: who, disk, sector, bytes, queued and device time (BPF)",
		Long: "Trace every block request, as bcc's biosnoop does, and print them in issue order when\n" +
			"tracing ends: the submitter, disk, operation, sector, size, time queued and at the device.",
		Example: "  sonde biosnoop 5\n  sonde biosnoop --comm postgres -d 10 --json",
	}
	f := cmd.Flags()
	addPidFlag(f, &pid, "show I/O submitted by")
	f.StringVar(&comm, "comm", "", "only I/O submitted by processes with this name")
	addDurationFlag(f, &duration, "tracing")
	f.BoolVar(&asJSON, "json", false, "write JSON Lines, one request a line (keys in docs/json.md)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := durationArg(cmd, args, &duration); err != nil {
			return err
		}
		if _, err := pidTarget(pid); err != nil {
			return err
		}
		progress("tracing block I/O, %s", forHow(duration))
		ctx, stop := interruptible()
		defer stop()
		o := bio.SnoopOptions
		o.Duration = duration
		res, err := bio.Run(ctx, bio.SnoopStages, o)
		if err != nil {
			return err
		}
		return writeView(stdout(), bio.NewSnoop(res, bio.Filter{Pid: pid, Comm: comm}), asJSON)
	}
	return cmd
}
