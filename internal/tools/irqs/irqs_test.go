package irqs_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/irqs"
)

// kernelCounts reads /proc/interrupts (hard: numbered lines with a single
// handler, by irq) or /proc/softirqs (by vector): the kernel's own count of
// each, summed over the CPUs.
func kernelCounts(t *testing.T, soft bool) map[uint32]uint64 {
	t.Helper()
	path := "/proc/interrupts"
	if soft {
		path = "/proc/softirqs"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	ncpu := len(strings.Fields(lines[0]))
	out := map[uint32]uint64{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < ncpu+1 {
			continue
		}
		label := strings.TrimSuffix(f[0], ":")
		var id uint32
		if soft {
			i := indexOf(irqs.SoftirqNames, strings.ToLower(label))
			if i < 0 {
				continue
			}
			id = uint32(i)
		} else {
			n, err := strconv.ParseUint(label, 10, 32)
			if err != nil || strings.Contains(l, ",") { // not a numbered line, or a shared one
				continue
			}
			id = uint32(n)
		}
		var sum uint64
		for _, c := range f[1 : 1+ncpu] {
			v, _ := strconv.ParseUint(c, 10, 64)
			sum += v
		}
		out[id] = sum
	}
	return out
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// work makes interrupts: direct disk writes (the disk's completions) and
// loopback traffic (net_rx).
func work(t *testing.T) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "io")
	if _, err := testutil.TryTool("dd", "if=/dev/zero", "of="+f, "bs=4k", "count=200", "oflag=direct", "status=none"); err != nil {
		t.Logf("%v (no disk interrupts from it)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write(bytes.Repeat([]byte{'x'}, 4<<20))
	c.Close()
}

// TestIrqsAgainstProcCounts: every interrupt handler's and softirq
// vector's count lies between the kernel's own counts (/proc/interrupts,
// /proc/softirqs) over a span inside the traced one and over a span
// around it; the totals are not zero.
func TestIrqsAgainstProcCounts(t *testing.T) {
	testutil.RequirePrivileged(t)
	outer0 := [2]map[uint32]uint64{kernelCounts(t, false), kernelCounts(t, true)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		r   *irqs.Result
		err error
	}
	res := [2]chan result{make(chan result, 1), make(chan result, 1)}
	for i, soft := range []bool{false, true} {
		go func() {
			r, err := irqs.Run(ctx, irqs.Options{Soft: soft, Dist: soft})
			res[i] <- result{r, err}
		}()
	}
	testutil.WaitBPFLinks(t, os.Getpid(), 4, 30*time.Second)
	inner0 := [2]map[uint32]uint64{kernelCounts(t, false), kernelCounts(t, true)}
	work(t)
	inner1 := [2]map[uint32]uint64{kernelCounts(t, false), kernelCounts(t, true)}
	cancel()
	var got [2]*irqs.Result
	for i := range res {
		r := <-res[i]
		if r.err != nil {
			t.Fatal(r.err)
		}
		got[i] = r.r
	}
	outer1 := [2]map[uint32]uint64{kernelCounts(t, false), kernelCounts(t, true)}

	for i, kind := range []string{"hardirqs", "softirqs"} {
		var total, count uint64
		seen := map[uint32]irqs.Irq{}
		for _, x := range got[i].Irqs {
			seen[x.Irq] = x
			total += x.SumNS
			count += x.Count
			if x.Hist != nil && x.Hist.Count() != x.Count {
				t.Errorf("%s %s: %d runs in the distribution, %d counted", kind, x.Name, x.Hist.Count(), x.Count)
			}
		}
		if total == 0 || count == 0 {
			t.Errorf("%s: nothing measured: %+v", kind, got[i].Irqs)
		}
		for id, after := range inner1[i] {
			lo, hi := after-inner0[i][id], outer1[i][id]-outer0[i][id]
			n := seen[id].Count
			if n < lo || n > hi {
				t.Errorf("%s %d (%s): %d runs, the kernel counted %d to %d", kind, id, seen[id].Name, n, lo, hi)
			}
		}
		t.Logf("%s: %d runs, %v in all: %+v", kind, count, time.Duration(total), got[i].Irqs)
	}
}
