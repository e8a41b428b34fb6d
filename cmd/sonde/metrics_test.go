package main

// sonde agent --metrics scraped by a real Prometheus (Debian's package).

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// promQuery runs an instant PromQL query and returns the first result's
// value and sample time, ok false when there is none yet.
func promQuery(t *testing.T, addr, q string) (float64, float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" || len(r.Data.Result) == 0 {
		return 0, 0, false
	}
	ts, _ := r.Data.Result[0].Value[0].(float64)
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, ts, err == nil
}

func TestAgentMetricsPrometheus(t *testing.T) {
	testutil.RequirePrivileged(t)
	prom := testutil.RequireTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	agent := exec.Command(testutil.Sonde(t), "agent", "--metrics", metricsAddr, "--metrics-window", "2s")
	agentLog, _ := os.Create(filepath.Join(dir, "agent.log"))
	agent.Stderr = agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Signal(os.Interrupt); agent.Wait() })
	waitFor(t, "the agent's metrics", func() bool {
		r, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})

	// The workload starts after the accounting: both count all its time.
	w := startWork(t, dir, "100000")
	defer syscall.Kill(w.Process.Pid, syscall.SIGCONT)

	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 500ms\nscrape_configs:\n  - job_name: sonde\n    static_configs:\n      - targets: ['%s']\n", metricsAddr)), 0o644)
	p := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)
	promLog, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	p.Stdout, p.Stderr = promLog, promLog
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })

	pid := w.Process.Pid
	q := fmt.Sprintf(`sonde_task_cpu_seconds_total{tid="%d"}`, pid)
	waitFor(t, "Prometheus to scrape the workload's CPU time", func() bool { v, _, ok := promQuery(t, promAddr, q); return ok && v > 1 })
	// Freeze the workload, then compare once a scrape after the freeze is
	// in: its CPU time stands still, so both sides read the same total.
	syscall.Kill(pid, syscall.SIGSTOP)
	time.Sleep(100 * time.Millisecond)
	frozen := time.Now()
	want := float64(schedstatNS(t, pid)) / 1e9
	var got float64
	waitFor(t, "a scrape after the freeze", func() bool {
		v, ts, ok := promQuery(t, promAddr, q)
		got = v
		return ok && ts > float64(frozen.UnixMilli())/1e3+0.6
	})
	if math.Abs(got-want) > 0.02*want {
		t.Errorf("Prometheus says the workload ran %.4f s; /proc/%d/schedstat says %.4f s (want within 2%%)", got, pid, want)
	}
	t.Logf("CPU seconds: PromQL %.4f, schedstat %.4f", got, want)

	for _, q := range []string{
		`sonde_comm_cpu_seconds_total{comm="work"}`,
		`sonde_runqueue_latency_seconds_count`,
		`sum(sonde_syscalls_total)`,
		`sonde_lost_events_total{source="syscount"}`,
		`sonde_cputime_lost_slices_total`,
		`sonde_agent_process_resident_memory_bytes`,
		`sonde_agent_process_cpu_seconds_total`,
		`sonde_block_io_latency_seconds_count`,
	} {
		for end := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, _, ok := promQuery(t, promAddr, q); ok {
				break
			}
			if time.Now().After(end) {
				resp, _ := http.Get("http://" + promAddr + "/api/v1/targets")
				var b strings.Builder
				if resp != nil {
					io.Copy(&b, resp.Body)
					resp.Body.Close()
				}
				n, _, _ := promQuery(t, promAddr, "count(sonde_comm_cpu_seconds_total)")
				m, _ := http.Get("http://" + metricsAddr + "/metrics")
				var mb strings.Builder
				if m != nil {
					io.Copy(&mb, m.Body)
					m.Body.Close()
				}
				var work []string
				for _, l := range strings.Split(mb.String(), "\n") {
					if strings.Contains(l, "work") {
						work = append(work, l)
					}
				}
				lg, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
				t.Fatalf("no %s in Prometheus (%v comm series); its targets: %s\nagent: %q\nprometheus log: %s", q, n, b.String(), work, lg[max(0, len(lg)-3000):])
			}
		}
	}
	if v, _, _ := promQuery(t, promAddr, `sonde_comm_cpu_seconds_total{comm="work"}`); math.Abs(v-want) > 0.02*want {
		t.Errorf("comm work: %.4f s, want %.4f", v, want)
	}
	if v, _, _ := promQuery(t, promAddr, `sum(sonde_source_up)`); v != 4 {
		b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		t.Errorf("%v of 4 sources up; agent log:\n%s", v, strings.TrimSpace(string(b)))
	}
}
