package stackcount_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/stackcount"
)

// through sums the hits of the stacks that pass through function fn.
func through(p *model.Profile, fn string) uint64 {
	var n uint64
	for _, s := range p.Samples {
		for _, loc := range p.Stacks[s.Stack] {
			if p.FrameName(loc) == fn {
				n += s.Period
				break
			}
		}
	}
	return n
}

// TestStackcountExact: a program calls target (which makes one getppid
// syscall) 3,000 times from caller_a and 1,000 times from caller_b;
// stackcount on the syscall's tracepoint and on target (a uprobe) must
// count exactly those hits, split by caller through the user stacks the
// shared unwinder walked.
func TestStackcountExact(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	bin := testutil.BuildC(t, dir, "stackwork", []string{testutil.PackageC("stackwork.c")})
	const a, b = 3000, 1000
	work := testutil.StartPiped(t, bin, strconv.Itoa(a), strconv.Itoa(b))
	pid := work.Cmd.Process.Pid

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		r   *stackcount.Result
		err error
	}
	events := []string{"syscalls:sys_enter_getppid", "u:" + bin + ":target"}
	res := make([]chan result, len(events))
	for i, e := range events {
		res[i] = make(chan result, 1)
		go func() {
			r, err := stackcount.Run(ctx, stackcount.Options{Events: []string{e}, Pid: pid, User: true, Kernel: true})
			res[i] <- result{r, err}
		}()
	}
	// Each run holds its probe's link and the unwinder's two (exec, exit).
	testutil.WaitBPFLinks(t, os.Getpid(), 2*3, 60*time.Second)
	fmt.Fprintln(work.In, "go")
	if l, err := work.Line(); !strings.HasPrefix(l, "done") {
		t.Fatalf("stackwork printed %q (%v)", l, err)
	}
	cancel()
	for i, e := range events {
		r := <-res[i]
		if r.err != nil {
			t.Fatalf("%s: %v", e, r.err)
		}
		p := r.r.Profile
		gotA, gotB := through(p, "caller_a"), through(p, "caller_b")
		if r.r.Hits != a+b || gotA != a || gotB != b || r.r.Errors.MapFull != 0 {
			t.Errorf("%s: %d hits (%d through caller_a, %d through caller_b), want %d (%d, %d); errors %+v",
				e, r.r.Hits, gotA, gotB, a+b, a, b, r.r.Errors)
		}
		t.Logf("%s: %d hits, %d via caller_a, %d via caller_b; user stacks %+v", e, r.r.Hits, gotA, gotB, r.r.Stacks)
	}
}
