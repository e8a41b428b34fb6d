package main

// sonde agent's exports read by the real consumers: --metrics scraped by
// Prometheus (Debian's package), --continuous profiles pushed to an
// OpenTelemetry Collector built here from the collector's Go modules
// (testdata/otelcol: the OTLP receiver with profiles enabled and a file
// exporter writing OTLP JSON).

import (
	"bufio"
	"bytes"
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

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/sonde-dev/sonde/internal/collect/cgroup"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// startLogged starts bin with args in the background, its standard output
// and error going to dir/log (read when a test fails); when the test ends
// it sends stop and waits.
func startLogged(t *testing.T, dir, log string, stop os.Signal, bin string, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, log))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(stop); cmd.Wait(); f.Close() })
	return cmd
}

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
	startLogged(t, dir, "agent.log", os.Interrupt, testutil.Sonde(t), "agent", "--metrics", metricsAddr, "--metrics-window", "2s")
	waitFor(t, "the agent's metrics", func() bool {
		r, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})

	// The workload starts after the accounting: both count all its time.
	// It runs in a cgroup named as a container runtime names one.
	cg, ctr := containerCgroup(t)
	w := startIn(t, cg, testutil.BuildC(t, dir, "work", []string{"work.c"}), "100000")
	defer syscall.Kill(w.Process.Pid, syscall.SIGCONT)

	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 500ms\nscrape_configs:\n  - job_name: sonde\n    static_configs:\n      - targets: ['%s']\n", metricsAddr)), 0o644)
	startLogged(t, dir, "prometheus.log", os.Kill, prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)

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
	cq := fmt.Sprintf(`sonde_cgroup_cpu_seconds_total{container_id="%s",pod_uid="%s"}`, ctr.ID, ctr.PodUID)
	if v, _, ok := promQuery(t, promAddr, cq); !ok || math.Abs(v-want) > 0.02*want {
		t.Errorf("%s: %.4f s (found: %v), want the workload's %.4f s", cq, v, ok, want)
	}
	if v, _, _ := promQuery(t, promAddr, `sum(sonde_source_up)`); v != 4 {
		b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		t.Errorf("%v of 4 sources up; agent log:\n%s", v, strings.TrimSpace(string(b)))
	}
}

func TestContinuousToCollector(t *testing.T) {
	dir, col := testutil.GoWorkload(t, "otelcol", "otelcol")
	port := freePort(t, "tcp")
	out := filepath.Join(dir, "profiles.jsonl")
	cfg := filepath.Join(dir, "collector.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jsonfile:
    path: %s
service:
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [jsonfile]
  telemetry:
    metrics:
      level: none
`, port, out)), 0o644)
	startLogged(t, dir, "collector.log", os.Kill, col, "--config="+cfg, "--feature-gates=service.profilesSupport")
	waitFor(t, "the collector", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "collector.log"))
		return strings.Contains(string(b), "Everything is ready")
	})

	cg, ctr := containerCgroup(t)
	w := startIn(t, cg, testutil.BuildC(t, dir, "work", []string{"work.c"}), "100000")
	startLogged(t, dir, "agent.log", os.Interrupt, testutil.Sonde(t), "agent", "--continuous", "--every", "2s", "--freq", "199",
		"--otlp", fmt.Sprintf("http://127.0.0.1:%d", port))

	// Leaf functions of the workload's samples, over every period received,
	// until there are enough for a share.
	var leaves map[string]int64
	var total int64
	var resource map[string]any
	for end := time.Now().Add(40 * time.Second); total < 600; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
			t.Fatalf("%d of the workload's samples at the collector after 40 s; agent log:\n%s", total, b)
		}
		leaves, total, resource = workloadLeaves(t, out, int64(w.Process.Pid))
	}
	top, n := "", int64(0)
	for f, v := range leaves {
		if v > n {
			top, n = f, v
		}
	}
	share := 100 * float64(leaves["spin_a"]) / float64(leaves["spin_a"]+leaves["spin_b"])
	if top != "spin_a" || math.Abs(share-75) > 6 {
		t.Errorf("top function %s (%d of %d samples); spin_a/spin_b = %.1f%%, want spin_a at 75%% ± 6", top, n, total, share)
	}
	t.Logf("collector: top %s, spin_a share %.1f%% of spin_a+spin_b, %d samples; resource %v", top, share, total, resource)
	for _, k := range []string{"host.name", "process.executable.name", "service.name", "process.linux.cgroup"} {
		if resource[k] == nil || resource[k] == "" {
			t.Errorf("resource attribute %s missing: %v", k, resource)
		}
	}
	if resource["container.id"] != ctr.ID || resource["k8s.pod.uid"] != ctr.PodUID {
		t.Errorf("resource container.id %v, k8s.pod.uid %v; the workload's cgroup says %s and %s", resource["container.id"], resource["k8s.pod.uid"], ctr.ID, ctr.PodUID)
	}
}

// containerCgroup makes a cgroup v2 path as Kubernetes with the docker
// runtime names one (…/kubepods/podUID/docker-ID.scope), removed at the
// end, and returns its directory and the container id and pod uid it
// stands for.
func containerCgroup(t *testing.T) (string, cgroup.Container) {
	t.Helper()
	testutil.RequirePrivileged(t)
	v2 := cgroupV2(t)
	ctr := cgroup.Container{ID: fmt.Sprintf("%064x", os.Getpid()*7919+1), PodUID: fmt.Sprintf("5e0d%04x-1f2b-4c3d-9e8f-%012x", os.Getpid()&0xffff, os.Getpid())}
	top := fmt.Sprintf("%s/sonde-kube-%d", v2, os.Getpid())
	dir := top
	for _, el := range []string{"", "/kubepods", "/pod" + ctr.PodUID, "/docker-" + ctr.ID + ".scope"} {
		dir += el
		makeCgroupNow(t, dir)
	}
	t.Cleanup(func() {
		killAll(dir)
		for d := dir; len(d) >= len(top); d = filepath.Dir(d) {
			os.Remove(d)
		}
	})
	if got := cgroup.ContainerOf(strings.TrimPrefix(dir, v2)); got != ctr {
		t.Fatalf("the test's cgroup %s reads as %+v, want %+v", dir, got, ctr)
	}
	return dir, ctr
}

// workloadLeaves reads the collector's file: per leaf function, the
// samples of the process with this pid.
func workloadLeaves(t *testing.T, path string, pid int64) (map[string]int64, int64, map[string]any) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, nil
	}
	// The collector may be writing a line as it is read: only whole
	// lines (ended by a newline) are its output so far (a cut line once
	// failed the parse in CI).
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	leaves := map[string]int64{}
	var total int64
	var res map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var u pprofile.JSONUnmarshaler
		ps, err := u.UnmarshalProfiles(sc.Bytes())
		if err != nil {
			t.Fatalf("collector output: %v", err)
		}
		d := ps.Dictionary()
		for i := 0; i < ps.ResourceProfiles().Len(); i++ {
			rp := ps.ResourceProfiles().At(i)
			if v, ok := rp.Resource().Attributes().Get("process.pid"); !ok || v.Int() != pid {
				continue
			}
			res = rp.Resource().Attributes().AsRaw()
			prof := rp.ScopeProfiles().At(0).Profiles().At(0)
			for j := 0; j < prof.Samples().Len(); j++ {
				s := prof.Samples().At(j)
				st := d.StackTable().At(int(s.StackIndex()))
				if st.LocationIndices().Len() == 0 {
					continue
				}
				loc := d.LocationTable().At(int(st.LocationIndices().At(0)))
				fn := d.FunctionTable().At(int(loc.Lines().At(0).FunctionIndex()))
				leaves[d.StringTable().At(int(fn.NameStrindex()))] += s.Values().At(0)
				total += s.Values().At(0)
			}
		}
	}
	return leaves, total, res
}
