package main

// sonde agent --continuous pushing to a real OpenTelemetry Collector, built
// here from the collector's Go modules (testdata/otelcol: the OTLP receiver
// with profiles enabled and a file exporter writing OTLP JSON).

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/sonde-dev/sonde/internal/testutil"
)

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
	c := exec.Command(col, "--config="+cfg, "--feature-gates=service.profilesSupport")
	colLog, _ := os.Create(filepath.Join(dir, "collector.log"))
	c.Stdout, c.Stderr = colLog, colLog
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	waitFor(t, "the collector", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "collector.log"))
		return strings.Contains(string(b), "Everything is ready")
	})

	w := startWork(t, dir, "100000")
	agent := exec.Command(testutil.Sonde(t), "agent", "--continuous", "--every", "2s", "--freq", "199",
		"--otlp", fmt.Sprintf("http://127.0.0.1:%d", port))
	agentLog, _ := os.Create(filepath.Join(dir, "agent.log"))
	agent.Stderr = agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Signal(os.Interrupt); agent.Wait() })

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
}

// workloadLeaves reads the collector's file: per leaf function, the
// samples of the process with this pid.
func workloadLeaves(t *testing.T, path string, pid int64) (map[string]int64, int64, map[string]any) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil
	}
	defer f.Close()
	leaves := map[string]int64{}
	var total int64
	var res map[string]any
	sc := bufio.NewScanner(f)
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
