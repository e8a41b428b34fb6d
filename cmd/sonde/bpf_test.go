package main

// Tests for the eBPF tool family, starting with seed 004 reproduced: a
// server whose every request waits 30–100 ms for a reverse DNS lookup.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

type offcpuJSON struct {
	Stacks []struct {
		Comm      string  `json:"comm"`
		Pid       int     `json:"pid"`
		BlockedUS float64 `json:"blocked_us"`
		Frames    []struct {
			Sym    string `json:"sym"`
			Kernel bool   `json:"kernel"`
		} `json:"frames"`
	} `json:"stacks"`
	Total float64 `json:"total_blocked_us"`
}

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dnsSetup starts the slow responder, the server and a client load that
// runs until stop is closed; it returns the server's pid and binary.
func dnsSetup(t *testing.T, dir string, cached bool) (int, string, chan struct{}) {
	t.Helper()
	dnsPort, httpPort := freePort(t, "udp"), freePort(t, "tcp")
	testutil.BuildC(t, dir, "slowdns", []string{"slowdns.c"}, "-pthread")
	name := "dnsserver"
	flags := []string{"-pthread", "-fno-optimize-sibling-calls"}
	if cached {
		name = "dnsserver_cached"
		flags = append(flags, "-DCACHED")
	}
	bin := testutil.BuildC(t, dir, name, []string{"dnsserver.c"}, flags...)
	dns := exec.Command(dir+"/slowdns", strconv.Itoa(dnsPort))
	if err := dns.Start(); err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, strconv.Itoa(httpPort), strconv.Itoa(dnsPort), "4")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		srv.Process.Kill()
		srv.Wait()
		dns.Process.Kill()
		dns.Wait()
	})
	var conn net.Conn
	var err error
	for i := 0; i < 50; i++ {
		if conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpPort)); err == nil {
			conn.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("server did not start: %v", err)
	}
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", httpPort))
			if err != nil {
				return
			}
			defer conn.Close()
			r := bufio.NewReader(conn)
			for {
				select {
				case <-stop:
					return
				default:
				}
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := conn.Write([]byte("GET /\n")); err != nil {
					return
				}
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	return srv.Process.Pid, bin, stop
}

func hasFrame(frames []struct {
	Sym    string `json:"sym"`
	Kernel bool   `json:"kernel"`
}, re *regexp.Regexp, kernel bool) bool {
	for _, f := range frames {
		if f.Kernel == kernel && re.MatchString(f.Sym) {
			return true
		}
	}
	return false
}

func offcpuRun(t *testing.T, dir string, args ...string) offcpuJSON {
	t.Helper()
	r := testutil.MustRun(t, dir, args...)
	var o offcpuJSON
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
		t.Fatalf("%v JSON: %v\n%s", args, err, r.Stdout)
	}
	return o
}

// lookupShare is the blocked time in stacks through reverse_lookup that
// wait in poll/recv, and the total.
func lookupShare(o offcpuJSON) (float64, float64) {
	lookup := regexp.MustCompile(`^reverse_lookup$`)
	wait := regexp.MustCompile(`poll|recv`)
	var in float64
	for _, s := range o.Stacks {
		if hasFrame(s.Frames, lookup, false) && hasFrame(s.Frames, wait, true) {
			in += s.BlockedUS
		}
	}
	return in, o.Total
}

func TestSeed004DNSStall(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	pid, bin, stop := dnsSetup(t, dir, false)
	p := strconv.Itoa(pid)

	// Off-CPU: the server's blocked time is in reverse_lookup, waiting in poll.
	o := offcpuRun(t, dir, "offcpu", "-p", p, "-d", "2s", "--json")
	in, total := lookupShare(o)
	t.Logf("offcpu: %.0f of %.0f us blocked in reverse_lookup → poll/recv (%.1f%%)", in, total, 100*in/total)
	if total == 0 || in/total < 0.8 {
		t.Errorf("reverse_lookup + poll/recv holds %.1f%% of blocked time, want ≥ 80%%", 100*in/max(total, 1))
	}

	// Function latency: 30–100 ms replies put calls in the 16–128 ms buckets.
	r := testutil.MustRun(t, dir, "funclat", "-p", p, "-d", "2s", "--unit", "ms", "--json", bin+":reverse_lookup")
	var fl struct {
		Functions []struct {
			Stats   struct{ Count int } `json:"stats"`
			Buckets []struct {
				Lo, Hi, Count uint64
			} `json:"buckets"`
		} `json:"functions"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &fl); err != nil || len(fl.Functions) != 1 {
		t.Fatalf("funclat JSON: %v\n%s", err, r.Stdout)
	}
	var inRange, all uint64
	for _, b := range fl.Functions[0].Buckets {
		all += b.Count
		if b.Lo >= 16 && b.Hi <= 127 {
			inRange += b.Count
		}
	}
	t.Logf("funclat: %d of %d calls in 16–128 ms", inRange, all)
	if all < 20 || float64(inRange) < 0.9*float64(all) {
		t.Errorf("%d of %d calls in 16–128 ms, want ≥ 90%%", inRange, all)
	}

	// Wake-ups: the reply's receive path wakes the server.
	w := offcpuRun(t, dir, "wakeup", "-p", p, "-d", "2s", "--json")
	rx := regexp.MustCompile(`udp|sock_def_readable|pollwake`)
	var woken, lookupTotal float64
	for _, s := range w.Stacks {
		sep := -1
		for i, f := range s.Frames {
			if f.Sym == "--" {
				sep = i
			}
		}
		if sep < 0 {
			continue
		}
		blocked, waker := s.Frames[sep+1:], s.Frames[:sep]
		if !hasFrame(blocked, regexp.MustCompile(`^reverse_lookup$`), false) {
			continue
		}
		lookupTotal += s.BlockedUS
		if hasFrame(waker, rx, true) {
			woken += s.BlockedUS
		}
	}
	t.Logf("wakeup: %.0f of %.0f us in reverse_lookup woken through the UDP receive path", woken, lookupTotal)
	if lookupTotal == 0 || woken/lookupTotal < 0.8 {
		t.Errorf("the UDP receive path woke %.1f%% of reverse_lookup's blocked time, want most", 100*woken/max(lookupTotal, 1))
	}
	close(stop)

	// With cached lookups the blocked time in reverse_lookup is gone.
	dir2 := t.TempDir()
	pid2, _, _ := dnsSetup(t, dir2, true)
	time.Sleep(300 * time.Millisecond) // let the first lookups of each client fill the cache
	o2 := offcpuRun(t, dir2, "offcpu", "-p", strconv.Itoa(pid2), "-d", "2s", "--json")
	in2, total2 := lookupShare(o2)
	t.Logf("cached: %.0f of %.0f us blocked in reverse_lookup", in2, total2)
	if in2 > 0.05*in {
		t.Errorf("cached build still blocks %.0f us in reverse_lookup (uncached: %.0f)", in2, in)
	}
}

func TestFunclatKernelUnsupported(t *testing.T) {
	testutil.RequirePrivileged(t)
	r := testutil.Run(t, t.TempDir(), "funclat", "-d", "1s", "vfs_read")
	if r.Code == 0 {
		t.Skip("this kernel has fentry or kprobes: kernel function latency works here")
	}
	if !strings.Contains(r.Stderr, "fentry") || !strings.Contains(r.Stderr, "kprobe") || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 0 {
		t.Errorf("want one line naming fentry and kprobes, got %q", r.Stderr)
	}
}
