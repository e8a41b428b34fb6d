package perfdata

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestAgainstPerfReport records with Debian's perf and checks that the
// import agrees with perf report on the same file: every comm/dso/symbol
// row above 0.5% within 0.1 points, the same sample, period and lost totals.
func TestAgainstPerfReport(t *testing.T) {
	perfBin := testutil.RequireTool(t, "perf", "linux-perf")
	dir, work := testutil.Workload(t, "work", []string{"work.c"})
	// A copy deleted after recording: only perf's build-id cache has it then.
	gone := testutil.BuildC(t, dir, "gone", []string{"work.c"})

	cases := []struct {
		name   string
		args   []string
		pipe   bool
		remove string // a binary to delete after recording
		check  func(t *testing.T, p *model.Profile)
	}{
		{name: "cpu_clock_callchain", args: []string{"-e", "cpu-clock", "-g", gone, "150"}, remove: gone, check: checkSplit},
		{name: "system_wide_callchain", args: []string{"-a", "-g", "-e", "cpu-clock", work, "60"}},
		{name: "fixed_period", args: []string{"-e", "cpu-clock", "-c", "200000", work, "80"}, check: func(t *testing.T, p *model.Profile) {
			checkSplit(t, p)
			for _, s := range p.Samples {
				if s.Period != 200000 {
					t.Fatalf("sample period %d, want the fixed 200000", s.Period)
				}
			}
		}},
		{name: "two_events", args: []string{"-e", "cpu-clock,task-clock", "-c", "250000", "-g", work, "80"}, check: func(t *testing.T, p *model.Profile) {
			if len(p.Meta.Events) != 2 || p.Meta.Events[0].Name != "cpu-clock" || p.Meta.Events[1].Name != "task-clock" {
				t.Fatalf("events %+v, want cpu-clock and task-clock", p.Meta.Events)
			}
		}},
		{name: "tracepoint", args: []string{"-e", "sched:sched_switch", "-a", "sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.02; done"}, check: checkSchedSwitch},
		{name: "pipe", pipe: true, args: []string{"-e", "cpu-clock", "-g", work, "80"}, check: checkSplit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".data")
			// perf record fills $HOME/.debug, its build-id cache.
			home := filepath.Join(dir, tc.name+".home")
			cache := filepath.Join(home, ".debug")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			perf := &testutil.Perf{Bin: perfBin, Dir: dir, Home: home}
			args := []string{"record", "-q"}
			var stdout io.Writer
			if tc.pipe {
				out, err := os.Create(file)
				if err != nil {
					t.Fatal(err)
				}
				defer out.Close()
				args, stdout = append(args, "-o", "-"), out
			} else {
				args = append(args, "-o", file)
			}
			perf.Run(t, stdout, append(args, tc.args...)...)
			if tc.remove != "" {
				if err := os.Remove(tc.remove); err != nil {
					t.Fatal(err)
				}
			}

			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, res, err := Convert(f, Options{BuildIDDir: cache})
			if err != nil {
				t.Fatalf("importing %s: %v", file, err)
			}
			if res.File.Pipe != tc.pipe {
				t.Errorf("pipe format %v, want %v", res.File.Pipe, tc.pipe)
			}
			for _, u := range res.Unmatched {
				if u.Samples*200 > p.SampleCount() {
					t.Errorf("object left unnamed: %+v", u)
				}
			}

			out := perf.Run(t, nil, perfReportArgs(file)...)
			want, err := parsePerfReport(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("parsing perf report: %v\n%s", err, out)
			}
			compareReport(t, p, want)
			if tc.check != nil {
				tc.check(t, p)
			}
			t.Run("fold", func(t *testing.T) {
				inferno := testutil.RequireTool(t, "inferno-collapse-perf", "inferno (cargo install inferno)")
				// With several events perf pads their names and inferno then
				// misses the period, counting samples; this case samples
				// with a fixed period (-c), so its counts scale exactly.
				scale := uint64(1)
				if len(p.Meta.Events) > 1 {
					scale = p.Meta.Period
				}
				compareFold(t, perf, inferno, file, nil, scale)
				compareFold(t, perf, inferno, file, []string{"-F", "comm,pid,tid,time,event,ip,sym,dso,period"}, scale)
			})
		})
	}
}

// compareFold folds perf script text of file like inferno-collapse-perf
// --all does, line for line.
func compareFold(t *testing.T, perf *testutil.Perf, inferno, file string, fields []string, scale uint64) {
	t.Helper()
	text := perf.Run(t, nil, append([]string{"script", "-i", file}, fields...)...)
	// inferno cannot read a sample of a task perf shows with pid -1 and
	// then drops every line up to the next blank one; sonde reads them (see
	// TestFoldConventions), so both get the text without them.
	var kept []string
	skipping := false
	for _, l := range strings.SplitAfter(string(text), "\n") {
		if strings.HasPrefix(l, "\t") && skipping {
			continue // a frame of a dropped sample
		}
		skipping = strings.Contains(l, "/-1 ") || strings.Contains(l, " -1/") || strings.Contains(l, " -1 [")
		if !skipping {
			kept = append(kept, l)
		}
	}
	text = []byte(strings.Join(kept, ""))
	textFile := filepath.Join(t.TempDir(), "perf-script.txt")
	if err := os.WriteFile(textFile, text, 0o644); err != nil {
		t.Fatal(err)
	}
	want := testutil.Tool(t, inferno, "--all", textFile)
	folded, err := FoldScript(bytes.NewReader(text), FoldOptions{Kernel: true, JIT: true})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := WriteFolded(&got, folded); err != nil {
		t.Fatal(err)
	}
	wantLines := strings.Split(strings.TrimSpace(want), "\n")
	for i, l := range wantLines {
		if j := strings.LastIndexByte(l, ' '); j >= 0 && scale > 1 {
			n, err := strconv.ParseUint(l[j+1:], 10, 64)
			if err != nil {
				t.Fatalf("inferno line %q", l)
			}
			wantLines[i] = fmt.Sprintf("%s %d", l[:j], n*scale)
		}
	}
	gotLines := strings.Split(strings.TrimSpace(got.String()), "\n")
	testutil.SameLines(t, fmt.Sprintf("perf script %v: folded stacks", fields), "inferno", gotLines, wantLines)
	t.Logf("perf script %v: %d folded lines agree with inferno", fields, len(gotLines))
}

// checkSplit checks work.c's 3:1 split between spin_a and spin_b.
func checkSplit(t *testing.T, p *model.Profile) {
	t.Helper()
	var a, b uint64
	for _, s := range p.Samples {
		if s.Event != 0 {
			continue
		}
		switch p.FrameName(p.Stacks[s.Stack][0]) {
		case "spin_a":
			a += s.Period
		case "spin_b":
			b += s.Period
		}
	}
	if a+b == 0 {
		t.Fatalf("no samples in spin_a or spin_b")
	}
	if share := float64(a) / float64(a+b); math.Abs(share-0.75) > 0.03 {
		t.Errorf("spin_a share %.3f, want 0.75±0.03", share)
	}
	if p.Meta.Callchain {
		// main must call spin_a: frames after the leaf come from the chain.
		found := false
		for _, s := range p.Samples {
			st := p.Stacks[s.Stack]
			if len(st) >= 2 && p.FrameName(st[0]) == "spin_a" && p.FrameName(st[1]) == "main" {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no main → spin_a chain")
		}
	}
}

// checkSchedSwitch decodes each raw payload with the recorded format: the
// task switching out is the sampled thread.
func checkSchedSwitch(t *testing.T, p *model.Profile) {
	t.Helper()
	if len(p.Meta.Events) != 1 || p.Meta.Events[0].Kind != "tracepoint" {
		t.Fatalf("events %+v, want one tracepoint", p.Meta.Events)
	}
	var prevPid tracefs.Field
	for _, f := range p.Meta.Events[0].Fields {
		if f.Name == "prev_pid" {
			prevPid = tracefs.Field{Name: f.Name, Offset: int(f.Offset), Size: int(f.Size), Signed: f.Signed, Kind: tracefs.FieldKind(f.Kind)}
		}
	}
	if prevPid.Name == "" {
		t.Fatalf("no prev_pid field in %+v", p.Meta.Events[0].Fields)
	}
	if len(p.Samples) == 0 {
		t.Fatalf("no samples")
	}
	for _, s := range p.Samples {
		v, _, ok := prevPid.Int(s.Raw)
		// A task the kernel no longer gives a pid (exiting) samples as -1.
		if tid := p.Threads[s.Thread].Tid; !ok || int32(v) != tid && tid != -1 {
			t.Fatalf("prev_pid %d (ok %v), sampled thread %d", v, ok, p.Threads[s.Thread].Tid)
		}
	}
}

// perfReportArgs asks perf report for the comm,dso,sym rows with their
// periods: summing rounded percentages of the many one-sample rows of
// unsymbolized addresses would lose whole points.
func perfReportArgs(file string) []string {
	return []string{"report", "-i", file, "--stdio", "--no-children", "-g", "none",
		"-F", "overhead,period,sample,comm,dso,sym", "--percent-limit", "0"}
}

type perfEvent struct {
	samples uint64
	period  uint64
	rows    map[string]uint64 // period by comm|dso|sym
	// commWidth is the comm column's width: perf sizes it by each
	// thread's last comm and cuts a longer earlier one (perf-exec before
	// an exec shows as perf-ex when the program's name is 7 long).
	commWidth int
}

type perfReport struct {
	lost   uint64
	events map[string]*perfEvent
}

// parsePerfReport reads perf report --stdio -n --sort comm,dso,sym: one
// section per event, columns framed by the dotted line under the titles.
func parsePerfReport(r *bytes.Reader) (*perfReport, error) {
	rep := &perfReport{events: map[string]*perfEvent{}}
	var cur *perfEvent
	var cols [][2]int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# Total Lost Samples:"):
			n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "# Total Lost Samples:")), 10, 64)
			if err != nil {
				return nil, err
			}
			rep.lost = n
		case strings.HasPrefix(line, "# Samples:"):
			i := strings.Index(line, "of event '")
			if i < 0 {
				return nil, fmt.Errorf("bad line %q", line)
			}
			name := strings.TrimSuffix(line[i+len("of event '"):], "'")
			cur = &perfEvent{rows: map[string]uint64{}}
			rep.events[name] = cur
			cols = nil
		case strings.HasPrefix(line, "# Event count (approx.):") && cur != nil:
			n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "# Event count (approx.):")), 10, 64)
			if err != nil {
				return nil, err
			}
			cur.period = n
		case strings.HasPrefix(line, "# ....") && cur != nil:
			cols = nil
			for i := 0; i < len(line); {
				if line[i] != '.' {
					i++
					continue
				}
				j := i
				for j < len(line) && line[j] == '.' {
					j++
				}
				cols = append(cols, [2]int{i, j})
				i = j
			}
			if len(cols) == 6 {
				cur.commWidth = cols[3][1] - cols[3][0]
			}
		case cur != nil && len(cols) == 6 && strings.HasSuffix(strings.Fields(line + " x")[0], "%"):
			field := func(k int) string {
				end := cols[k][1]
				if k == len(cols)-1 || end > len(line) {
					end = len(line)
				}
				if cols[k][0] > len(line) {
					return ""
				}
				return strings.TrimSpace(line[cols[k][0]:end])
			}
			period, err := strconv.ParseUint(field(1), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad row %q: %v", line, err)
			}
			n, err := strconv.ParseUint(field(2), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad row %q: %v", line, err)
			}
			sym := field(5)
			if len(sym) > 4 && sym[0] == '[' && sym[2] == ']' {
				sym = sym[4:]
			}
			if strings.HasPrefix(sym, "0x") {
				sym = "?"
			}
			cur.samples += n
			cur.rows[field(3)+"|"+field(4)+"|"+testutil.AliasKey(sym)] += period
		}
	}
	return rep, sc.Err()
}

// compareReport checks the profile against perf's rows, event by event.
func compareReport(t *testing.T, p *model.Profile, want *perfReport) {
	t.Helper()
	if got := p.Meta.Lost; got != want.lost {
		t.Errorf("lost samples %d, perf report %d", got, want.lost)
	}
	if len(want.events) != len(p.Meta.Events) {
		t.Errorf("%d events, perf report shows %d", len(p.Meta.Events), len(want.events))
	}
	for ei, ev := range p.Meta.Events {
		w := want.events[ev.Name]
		if w == nil {
			t.Errorf("event %q not in perf report (%v)", ev.Name, want.events)
			continue
		}
		var samples, total uint64
		rows := map[string]uint64{}
		for _, s := range p.Samples {
			if int(s.Event) != ei {
				continue
			}
			samples++
			total += s.Period
			leaf := p.Stacks[s.Stack][0]
			sym := p.FrameName(leaf)
			if p.Locs[leaf].Func < 0 {
				sym = "?"
			}
			comm := p.Threads[s.Thread].Comm
			if w.commWidth > 0 && len(comm) > w.commWidth {
				comm = comm[:w.commWidth]
			}
			rows[comm+"|"+p.DSOName(leaf)+"|"+testutil.AliasKey(sym)] += s.Period
		}
		if samples != w.samples {
			t.Errorf("%s: %d samples, perf report %d", ev.Name, samples, w.samples)
		}
		if total != w.period {
			t.Errorf("%s: total period %d, perf report %d", ev.Name, total, w.period)
		}
		compared := testutil.SameShares(t, ev.Name, "perf report", rows, total, w.rows, w.period)
		t.Logf("%s: %d samples, %d rows above 0.5%% agree with perf report", ev.Name, samples, compared)
	}
}

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
		testutil.WaitFor(t, 20*time.Second, "perf's file to reach 64 KiB", func() bool {
			st, err := os.Stat(file)
			return err == nil && st.Size() > 64<<10
		})
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
