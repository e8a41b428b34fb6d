package tcpconn_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/tcpconn"
	"github.com/sonde-dev/sonde/internal/tools/tcpretrans"
)

// netns is a network namespace the test made, with its loopback up.
type netns string

func newNetns(t *testing.T, ip string) netns {
	t.Helper()
	n := netns(fmt.Sprintf("sonde-t%d", time.Now().UnixNano()%1e9))
	if out, err := exec.Command(ip, "netns", "add", string(n)).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(ip, "netns", "del", string(n)).Run() })
	// An Ethernet MTU: segments a token bucket can pass (loopback's 64 KB
	// would be dropped whole by a bucket smaller than that).
	n.run(t, ip, "link", "set", "lo", "mtu", "1500", "up")
	return n
}

// run runs a command (ip, tc) in the namespace.
func (n netns) run(t *testing.T, cmd string, args ...string) {
	t.Helper()
	ip, _ := exec.LookPath("ip")
	if out, err := exec.Command(ip, append([]string{"netns", "exec", string(n), cmd}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v in %s: %v\n%s", cmd, args, n, err, out)
	}
}

// lossy puts a qdisc that drops packets on the namespace's loopback and
// says which.
func (n netns) lossy(t *testing.T) string {
	t.Helper()
	ip, _ := exec.LookPath("ip")
	netem := []string{"netns", "exec", string(n), "tc", "qdisc", "add", "dev", "lo", "root", "netem", "loss", "20%"}
	out, err := exec.Command(ip, netem...).CombinedOutput()
	if err == nil {
		return "netem loss 20%"
	}
	if !strings.Contains(string(out), "unknown") {
		t.Fatalf("tc qdisc add … netem: %v\n%s", err, out)
	}
	n.run(t, "tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "8mbit", "burst", "32kb", "limit", "64kb")
	return "tbf rate 8mbit limit 64kb (no netem in this kernel)"
}

// do runs fn on a thread moved into the namespace: the sockets fn creates
// live there. The thread is never unlocked, so Go ends it with fn.
func (n netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/var/run/netns/" + string(n))
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering %s: %w", n, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// TestConnectAcceptRetransmitInNetns: in a network namespace of its own,
// the test makes connections whose ports it knows, one refused, then
// sends over one of them through a lossy qdisc (`tc … netem loss`, or a
// short tbf queue where the kernel has no netem) until the kernel counts a
// retransmit on it. tcpconnect must see each connect (the refused one with
// ECONNREFUSED), tcpaccept each accept, and tcpretrans exactly the
// retransmits bpftrace counts on the same tracepoint for those ports.
func TestConnectAcceptRetransmitInNetns(t *testing.T) {
	testutil.RequirePrivileged(t)
	ip := testutil.RequireTool(t, "ip", "iproute2")
	testutil.RequireTool(t, "tc", "iproute2")
	bt := testutil.RequireTool(t, "bpftrace", "bpftrace")
	ns := newNetns(t, ip)

	// The ports: a listener, and one that refuses.
	var ln net.Listener
	var refused int
	if err := ns.do(func() (err error) {
		if ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
			return err
		}
		l2, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		refused = l2.Addr().(*net.TCPAddr).Port
		return l2.Close()
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	// bpftrace counts the retransmits of the listener's connections.
	// It prints the count map at its end ("@n: 5"; nothing for none).
	prog := fmt.Sprintf(`tracepoint:tcp:tcp_retransmit_skb /args->sport == %d || args->dport == %d/ { @n = count(); }`, port, port)
	peer := exec.Command(bt, "-e", prog)
	var peerOut, peerErr testutil.SyncBuffer
	peer.Stdout, peer.Stderr = &peerOut, &peerErr
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	defer peer.Process.Kill()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	me := tcpconn.Options{Pid: os.Getpid()}
	connects := testutil.Collect(func(out func(tcpconn.Conn)) (*tcpconn.Result, error) { return tcpconn.Connects(ctx, me, out) })
	accepts := testutil.Collect(func(out func(tcpconn.Conn)) (*tcpconn.Result, error) { return tcpconn.Accepts(ctx, me, out) })
	retrans := testutil.Collect(func(out func(tcpretrans.Retransmit)) (*tcpretrans.Result, error) {
		return tcpretrans.Run(ctx, tcpretrans.Options{}, out)
	})
	testutil.WaitBPFLinks(t, os.Getpid(), 1+2+1, 30*time.Second) // accept4 at least; accept where it exists
	// bpftrace attaches tracepoints through perf events, not links: its
	// ready signal is the line it prints as it attaches. Its start-up
	// (LLVM, BTF) can take many seconds on a loaded machine.
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(peerOut.String(), "Attaching"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("bpftrace did not attach within 60 s: %s %s", peerOut.String(), peerErr.String())
		}
	}

	const n = 3
	var clients, served []net.Conn
	var refusedErr error
	t0 := time.Now()
	if err := ns.do(func() error {
		_, refusedErr = net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(refused))
		for range n {
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				return err
			}
			clients = append(clients, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(refusedErr, syscall.ECONNREFUSED) {
		t.Fatalf("the closed port answered %v, want ECONNREFUSED", refusedErr)
	}
	for range n {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, c)
	}
	setup := time.Since(t0)

	// Loss on the namespace's loopback, then data over the first
	// connection until the kernel has retransmitted some of it: netem's
	// random loss where the kernel has it, else a token bucket whose queue
	// is too short for the sender's bursts (this VM's kernel is built
	// without netem).
	loss := ns.lossy(t)
	sent := sendUntilRetransmit(t, clients[0], served[0])
	ns.run(t, "tc", "qdisc", "del", "dev", "lo", "root")
	for _, c := range append(clients, served...) {
		c.Close()
	}
	t.Logf("sent %d bytes through %s", sent, loss)

	clientPorts := map[uint16]bool{}
	for _, c := range clients {
		clientPorts[uint16(c.LocalAddr().(*net.TCPAddr).Port)] = true
	}
	testutil.WaitFor(t, 60*time.Second, "tcpconnect and tcpaccept to report all of the test's connections", func() bool {
		return len(connects.All()) >= n+1 && len(accepts.All()) >= n
	})
	// Every byte was acknowledged before the loss was removed and the
	// connections closed: nothing is left to retransmit, so bpftrace and
	// sonde, stopped one after the other, counted the same events.
	peer.Process.Signal(os.Interrupt)
	peer.Wait()
	cancel()
	connects.Wait(t)
	accepts.Wait(t)
	retrans.Wait(t)

	var ok, fail int
	for _, c := range connects.All() {
		switch {
		case c.Errno == "" && c.RPort == uint16(port) && clientPorts[c.LPort] && c.LAddr == "127.0.0.1" && c.ConnectNS > 0 && time.Duration(c.ConnectNS) <= setup:
			ok++
		case c.Errno == "ECONNREFUSED" && c.RPort == uint16(refused):
			fail++
		default:
			t.Errorf("tcpconnect reported a connection the test did not make: %+v", c)
		}
	}
	if ok != n || fail != 1 {
		t.Errorf("tcpconnect: %d of %d connections, %d of 1 refused: %+v", ok, n, fail, connects.All())
	}
	var acc int
	for _, c := range accepts.All() {
		if c.LPort == uint16(port) && clientPorts[c.RPort] && c.Pid == uint32(os.Getpid()) && c.QueuedNS > 0 && time.Duration(c.QueuedNS) <= setup {
			acc++
		} else {
			t.Errorf("tcpaccept reported an accept the test did not make: %+v", c)
		}
	}
	if acc != n {
		t.Errorf("tcpaccept: %d of %d accepts: %+v", acc, n, accepts.All())
	}
	rt, want := checkRetransmits(t, retrans.All(), port, peerOut.String(), peerErr.String())
	t.Logf("tcpconnect %d+%d refused, tcpaccept %d, tcpretrans %d retransmits (bpftrace %d)", ok, fail, acc, rt, want)
}

// checkRetransmits compares tcpretrans's retransmits of the listener's
// connections with bpftrace's count of the same (its map printed at its
// end: "@n: 5", nothing for none).
func checkRetransmits(t *testing.T, got []tcpretrans.Retransmit, port int, peerOut, peerErr string) (rt, want int) {
	t.Helper()
	for _, r := range got {
		if r.LAddr == "127.0.0.1" && (r.LPort == uint16(port) || r.RPort == uint16(port)) {
			rt++
		}
	}
	if m := regexp.MustCompile(`@n: (\d+)`).FindStringSubmatch(peerOut); m != nil {
		want, _ = strconv.Atoi(m[1])
	} else if strings.Contains(peerErr, "ERROR") {
		t.Fatalf("bpftrace: %s", peerErr)
	}
	if rt == 0 || rt != want {
		t.Errorf("tcpretrans saw %d retransmits of the test's connections, bpftrace %d", rt, want)
	}
	return rt, want
}

// sendUntilRetransmit writes to c, read on s, one chunk at a time, until the
// kernel counted a retransmit on c (tcp_info), and returns the bytes sent.
func sendUntilRetransmit(t *testing.T, c, s net.Conn) int {
	t.Helper()
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, bufio.NewReader(s))
		read <- n
	}()
	chunk := bytes.Repeat([]byte{'x'}, 256<<10)
	sent := 0
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if _, err := c.Write(chunk); err != nil {
			t.Fatal(err)
		}
		sent += len(chunk)
		if info := tcpInfo(t, raw); info.Total_retrans > 0 {
			// Retransmitted: wait until the peer acknowledged everything.
			for tcpInfo(t, raw).Unacked > 0 {
				if time.Now().After(deadline) {
					t.Fatal("data still unacknowledged after 60 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			return sent
		}
	}
	t.Fatal("no retransmit in 60 s of sending through the lossy qdisc")
	return sent
}

func tcpInfo(t *testing.T, raw syscall.RawConn) *unix.TCPInfo {
	t.Helper()
	var info *unix.TCPInfo
	var err error
	if cerr := raw.Control(func(fd uintptr) { info, err = unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO) }); cerr != nil || err != nil {
		t.Fatalf("TCP_INFO: %v %v", cerr, err)
	}
	return info
}
