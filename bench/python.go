package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// pythonCost is what walking CPython frames costs per sample: the BPF time
// of profile's programs per run (kernel.bpf_stats) at 999 Hz on a Python
// process whose stack is 20 Python frames deep, with its Python frames
// taken and with --no-interp (the native walk only).
func pythonCost(dir string) {
	old, _ := os.ReadFile("/proc/sys/kernel/bpf_stats_enabled")
	if err := os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0); err != nil {
		fail("python cost: cannot enable kernel.bpf_stats_enabled: " + err.Error())
	}
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", old, 0)
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		fmt.Printf("python cost: skipped (%s: %v)\n", py, err)
		return
	}
	// Its stack is 20 Python frames deep for an hour, or until killed.
	target := exec.Command(py, "testdata/pydeep.py", "3600")
	if err := target.Start(); err != nil {
		fmt.Println("python cost:", err)
		return
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := strconv.Itoa(target.Process.Pid)
	work := func() (uint64, string) { time.Sleep(3 * time.Second); return 0, "" }
	fmt.Println("\nCPython frames in the walk (profile -F 999 -p PID, python3.11, a stack 20 Python frames deep; BPF ns per sample, kernel-timed):")
	var native float64
	for _, c := range []struct {
		name string
		args []string
	}{
		{"native walk only (--no-interp)", []string{"--no-interp"}},
		{"with the Python frames", nil},
	} {
		args := append([]string{*sondeBin, "profile", "-F", "999", "-p", pid, "-d", "60", "--json"}, c.args...)
		var per []float64
		for i := 0; i < 3; i++ {
			t := measureTool(args, work)
			if t.failure != "" {
				fmt.Printf("  %s: %s\n", c.name, t.failure)
				return
			}
			if t.runs > 0 {
				per = append(per, float64(t.bpf.Nanoseconds())/float64(t.runs))
			}
		}
		m := median(per)
		if c.args != nil {
			native = m
			fmt.Printf("  %-32s %7.0f ns a sample\n", c.name, m)
			continue
		}
		// Negative is possible: the native walk through the interpreter's
		// C frames can cost more than taking the Python frames beside them.
		fmt.Printf("  %-32s %7.0f ns a sample (%+.0f ns, %+.0f ns per Python frame)\n", c.name, m, m-native, (m-native)/20)
	}
}
