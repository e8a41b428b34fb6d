package perfdata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestCutFixturesAgainstPerf cuts the committed perf.data and pipe stream
// at 30 random offsets each and reads every cut file with sonde and with
// perf report: sonde keeps at least the samples perf report shows, and says
// the file was cut.
func TestCutFixturesAgainstPerf(t *testing.T) {
	perfBin := testutil.RequireTool(t, "perf", "linux-perf")
	for _, name := range []string{"tiny.data", "tiny-pipe.data", "killed.data"} {
		t.Run(name, func(t *testing.T) {
			compareCuts(t, perfBin, readFixture(t, name), 30)
		})
	}
}

// TestCutRecordingsAgainstPerf does the same with recordings perf makes in
// the test (a file and a pipe stream of work.c with call chains), and
// compares a perf record killed by SIGKILL mid-run as it stands.
func TestCutRecordingsAgainstPerf(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir, work := testutil.Workload(t, "work", []string{"work.c"})
	perf := testutil.NewPerf(t, dir, dir) // perf's build-id cache stays here
	record := func(out string, args ...string) []string {
		return append([]string{"record", "-q", "-g", "-e", "cpu-clock", "-o", out}, args...)
	}

	t.Run("file", func(t *testing.T) {
		perf.Run(t, nil, record("f.data", work, "300")...)
		compareCuts(t, perf.Bin, readFile(t, filepath.Join(dir, "f.data")), 30)
	})
	t.Run("pipe", func(t *testing.T) {
		var out bytes.Buffer
		perf.Run(t, &out, record("-", work, "300")...)
		compareCuts(t, perf.Bin, out.Bytes(), 30)
	})
	t.Run("sigkill", func(t *testing.T) {
		w := testutil.Start(t, work, "30s")
		file := filepath.Join(dir, "k.data")
		cmd := perf.Cmd(record(file, "-p", strconv.Itoa(w.Process.Pid))...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// perf writes its ring as it goes: kill it once a good part of a
		// second of samples is on disk.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := os.Stat(file); err == nil && st.Size() > 64<<10 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		data := readFile(t, file)
		n, _ := compareCut(t, perf.Bin, data, len(data))
		if n < 100 {
			t.Errorf("the killed recording (%d bytes) reads %d samples", len(data), n)
		}
		compareCuts(t, perf.Bin, data, 10)
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compareCuts cuts data at n offsets drawn from a seeded generator (the
// same offsets every run for the same input).
func compareCuts(t *testing.T, perfBin string, data []byte, n int) {
	rng := rand.New(rand.NewPCG(26, uint64(len(data))))
	var sonde, perf, more int
	for range n {
		s, p := compareCut(t, perfBin, data, rng.IntN(len(data)))
		sonde, perf = sonde+s, perf+p
		if s > p {
			more++
		}
	}
	t.Logf("%d cuts of %d bytes: sonde read %d samples, perf report %d; sonde read more in %d files", n, len(data), sonde, perf, more)
}

// compareCut reads data[:at] with sonde and with perf report and checks
// that sonde has at least perf's samples; it returns both counts.
func compareCut(t *testing.T, perfBin string, data []byte, at int) (got, want int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), fmt.Sprintf("cut-%d.data", at))
	if err := os.WriteFile(file, data[:at], 0o644); err != nil {
		t.Fatal(err)
	}
	want = perfReportSamples(perfBin, file)
	p, _, err := convert(bytes.NewReader(data[:at]), Options{}, false)
	if err != nil {
		if want > 0 {
			t.Errorf("cut at %d of %d bytes: %v; perf report reads %d samples", at, len(data), err, want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("cut at %d: error spans lines: %q", at, err)
		}
		return 0, want
	}
	got = len(p.Samples)
	if got < want {
		t.Errorf("cut at %d of %d bytes: %d samples, perf report %d", at, len(data), got, want)
	}
	if at < len(data) && !cutWarned(p) && !(got == want && bytes.HasPrefix(data, pipeMagic())) {
		t.Errorf("cut at %d of %d bytes: no cut warning in %q", at, len(data), p.Meta.Warnings)
	}
	t.Logf("cut at %6d of %6d bytes: sonde %5d samples, perf report %5d", at, len(data), got, want)
	return got, want
}

// pipeMagic starts a pipe stream, which may end between two records
// without anything to tell a cut from the end.
func pipeMagic() []byte { return []byte(Magic + "\x10\x00\x00\x00\x00\x00\x00\x00") }

func cutWarned(p *model.Profile) bool {
	for _, w := range p.Meta.Warnings {
		if strings.HasPrefix(w, model.CutWarning) {
			return true
		}
	}
	return false
}

// perfReportSamples is the number of samples perf report shows for file,
// 0 when it refuses the file.
func perfReportSamples(perfBin, file string) int {
	perf := testutil.Perf{Bin: perfBin, Home: filepath.Dir(file)}
	out, _ := perf.Cmd("report", "-f", "-i", file, "--stdio", "-q", "-g", "none", "--sort", "pid", "-F", "sample").Output() // perf report exits 0 or not on cut files; its rows say what it read
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.Atoi(f[0]); err == nil {
			n += v
		}
	}
	return n
}
