package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

var agentSecs = flag.Int("agent-secs", 60, "seconds the continuous agent is measured")

// agentOverhead runs `sonde agent --continuous` at its default rate and
// period, pushing to a local OTLP sink, while spin keeps one CPU busy with
// stacks to sample; it reports the agent's CPU (share of one CPU) and
// peak RSS against the goals (≤ 1% of a CPU, ≤ 100 MB).
func agentOverhead(dir, spin string) {
	var posts, bytes atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err.Error())
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		posts.Add(1)
		bytes.Add(n)
	}))
	load := exec.Command(spin, "1000000000000", "1") // runs until killed
	if err := load.Start(); err != nil {
		fail(err.Error())
	}
	defer func() { load.Process.Kill(); load.Wait() }()
	agent := exec.Command(*sondeBin, "agent", "--continuous", "--otlp", "http://"+ln.Addr().String())
	agent.Stderr, _ = os.Create(filepath.Join(dir, "agent.log"))
	if err := agent.Start(); err != nil {
		fail(err.Error())
	}
	// Start-up (loading BPF, first symbol tables) is not the steady state.
	time.Sleep(5 * time.Second)
	cpu0 := procCPU(agent.Process.Pid)
	start := time.Now()
	time.Sleep(time.Duration(*agentSecs) * time.Second)
	cpu := procCPU(agent.Process.Pid) - cpu0
	wall := time.Since(start)
	peak := procStatus(agent.Process.Pid, "VmHWM:")
	agent.Process.Signal(os.Interrupt)
	agent.Wait()
	fmt.Printf("\n5. Agent overhead: sonde agent --continuous (19 Hz per CPU, 10 s profiles, OTLP to a local sink), %.0f s\n", wall.Seconds())
	fmt.Printf("   CPU    %6.3f%% of one CPU (goal ≤ 1%%)\n", 100*cpu.Seconds()/wall.Seconds())
	fmt.Printf("   RSS    %6.1f MB peak (goal ≤ 100 MB)\n", float64(peak)/1024)
	fmt.Printf("   sent   %d profiles, %.1f KB each\n", posts.Load(), float64(bytes.Load())/float64(max(posts.Load(), 1))/1024)
}

// procStatus reads one kB field of /proc/PID/status.
func procStatus(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field) {
			n, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return n
		}
	}
	return 0
}
