package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/syscount"
	"github.com/sonde-dev/sonde/internal/view/syscounts"
)

func newSyscountCmd() *cobra.Command {
	var (
		pid                  int
		lat, perProc, asJSON bool
		comm                 string
		top                  int
		duration             time.Duration
	)
	cmd := acceptsCommand(&cobra.Command{
		Use:   "syscount [flags] [--] [COMMAND [ARGS…]]",
		Short: "system calls counted and timed in the kernel, named from the architecture's table",
		Long: "Count system calls in the kernel, as bcc's syscount does: of a command given after the\n" +
			"options, of one process (-p; a command then only sets how long, as perf: -p PID sleep 5)\n" +
			"or of the whole system.",
		Example: "  sonde syscount -L ls -l\n  sonde syscount -p 1234 -d 5\n  sonde syscount -p 1234 sleep 5\n  sonde syscount -P --top 10 -d 2",
	})
	f := cmd.Flags()
	addPidFlag(f, &pid, "count")
	f.BoolVarP(&lat, "latency", "L", false, "also time each syscall (total, average, max)")
	f.BoolVarP(&perProc, "per-process", "P", false, "count per process and syscall")
	f.StringVar(&comm, "comm", "", "only processes with this name")
	f.IntVarP(&top, "top", "T", 20, "rows to print (0: all)")
	addDurationFlag(f, &duration, "counting")
	addJSONFlag(f, &asJSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		tgt, err := pidTarget(pid)
		if err != nil {
			return err
		}
		t := target{Command: args}
		if pid != 0 {
			t = target{Alongside: args}
		} else if len(args) > 0 {
			tgt = t.String()
		}
		if len(args) == 0 {
			progress("counting syscalls, %s", forHow(duration))
		}
		ctx, stop := interruptible()
		defer stop()
		ctx, wait, err := t.StartAlongside(ctx)
		if err != nil {
			return err
		}
		// --comm needs per-process counts to filter on; they are merged
		// back per syscall unless --per-process was asked for.
		res, err := syscount.Run(ctx, syscount.Options{Pid: pid, Command: t.Command, PerProcess: perProc || comm != "", Latency: lat, Duration: duration})
		exit := wait()
		if err != nil {
			return err
		}
		if len(t.Command) > 0 {
			exit = res.ExitCode
		}
		so := syscounts.Options{PerProcess: perProc, Latency: lat, Top: top, Comm: comm, Target: tgt, Command: len(args) > 0}
		if err := writeView(stdout(), syscounts.New(res, so), asJSON); err != nil {
			return err
		}
		return exitWith(exit)
	}
	return cmd
}
