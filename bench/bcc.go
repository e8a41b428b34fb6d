package main

// Cost rows of the bcc-style tools (issue 30): each beside libbpf-tools'
// tool of the same name where it runs here (tracepoints), else bpftrace
// doing the same work on the same tracepoint.

import (
	"os"
	"path/filepath"
	"strconv"
)

// bpftraceTcplife is tcplife's work on sock:inet_sock_set_state: a birth
// time per socket, and at the close a line with the ports, the bytes
// (tcp_sock's counters, by BTF) and the duration.
const bpftraceTcplife = `tracepoint:sock:inet_sock_set_state /args->protocol == 6/ {
  if (args->newstate < 4) { @birth[args->skaddr] = nsecs; }
  if (args->newstate == 7 && @birth[args->skaddr]) {
    $tp = (struct tcp_sock *)args->skaddr;
    printf("%d %d %d %d %d\n", args->sport, args->dport, $tp->bytes_acked, $tp->bytes_received, (nsecs - @birth[args->skaddr]) / 1000);
    delete(@birth[args->skaddr]);
  }
}`

// bpftraceTcpconnect is tcpconnect's work on the same tracepoint: the
// connecting task at SYN_SENT, a line when the connection is established.
const bpftraceTcpconnect = `tracepoint:sock:inet_sock_set_state /args->protocol == 6/ {
  if (args->newstate == 2) { @start[args->skaddr] = nsecs; @who[args->skaddr] = (pid, comm); }
  if (args->oldstate == 2 && @start[args->skaddr]) {
    $w = @who[args->skaddr];
    printf("%d %s %d %d\n", $w.0, $w.1, args->dport, (nsecs - @start[args->skaddr]) / 1000);
    delete(@start[args->skaddr]); delete(@who[args->skaddr]);
  }
}`

func bccCostCases(dir string, w costWorkloads) []costCase {
	bin := gcc(dir, "bccwork", "bench/testdata/bccwork.c", "-O1")
	file := filepath.Join(dir, "opened")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		fail(err.Error())
	}
	run := func(mode string, n int, name string, extra ...string) func() (uint64, string) {
		return func() (uint64, string) {
			mustRun(append([]string{bin, mode, strconv.Itoa(n)}, extra...)...)
			return uint64(n), name
		}
	}
	forks, opens, conns := run("forks", 5000, "exits"), run("opens", 200000, "opens", file), run("conns", 5000, "connections")
	return []costCase{
		{tool: "exitsnoop", sonde: []string{"exitsnoop"}, peerName: "exitsnoop", peer: []string{"exitsnoop"}, work: forks},
		{tool: "opensnoop", sonde: []string{"opensnoop"}, peerName: "opensnoop", peer: []string{"opensnoop"}, work: opens},
		{tool: "tcplife", sonde: []string{"tcplife"}, peerName: "bpftrace tcplife", peer: []string{"bpftrace", "-e", bpftraceTcplife}, work: conns},
		{tool: "tcpconnect", sonde: []string{"tcpconnect"}, peerName: "bpftrace tcpconn", peer: []string{"bpftrace", "-e", bpftraceTcpconnect}, work: conns},
		{tool: "cpudist", sonde: []string{"cpudist"}, peerName: "cpudist", peer: []string{"cpudist"}, work: w.switches},
		{tool: "softirqs", sonde: []string{"softirqs"}, peerName: "softirqs", peer: []string{"softirqs"}, work: w.io},
		{tool: "hardirqs", sonde: []string{"hardirqs"}, peerName: "hardirqs", peer: []string{"hardirqs"}, work: w.io},
		// libbpf-tools' stackcount needs kprobes: bpftrace counts the same
		// stacks (its user stacks by frame pointers, sonde's by .eh_frame).
		{tool: "stackcount", sonde: []string{"stackcount", "sched:sched_switch"}, peerName: "bpftrace stacks",
			peer: []string{"bpftrace", "-e", "tracepoint:sched:sched_switch { @[kstack, ustack, pid, comm] = count(); }"}, work: w.switches},
	}
}
