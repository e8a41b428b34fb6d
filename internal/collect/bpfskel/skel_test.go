package bpfskel

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/sonde-dev/sonde/internal/testutil"
	"golang.org/x/sys/unix"
)

// fakeFeatures answers the probes from a table: a missing entry is
// supported, an entry is the error the probe would give.
type fakeFeatures struct {
	missing map[string]error
	asked   []string
}

func (f *fakeFeatures) probe(k string) error {
	f.asked = append(f.asked, k)
	return f.missing[k]
}
func (f *fakeFeatures) TPBTF(ev string) error  { return f.probe("tp_btf/" + ev) }
func (f *fakeFeatures) RawTP() error           { return f.probe("raw_tp") }
func (f *fakeFeatures) Fentry(fn string) error { return f.probe("fentry/" + fn) }
func (f *fakeFeatures) Kprobe(fn string) error { return f.probe("kprobe/" + fn) }

var errNo = fmt.Errorf("loading a probe program: %w", ebpf.ErrNotSupported)

func TestChoose(t *testing.T) {
	sw := BTFTracepoint("sched_switch", "tp_btf_switch", "raw_switch")
	fn := KernelFunc("vfs_read", "fentry_entry", "kprobe_entry", false, 0)
	tests := []struct {
		name     string
		hook     Hook
		missing  map[string]error
		mode     Mode
		prog     string
		why      string // substring of Choice.Why
		err      string // substring of the error
		notAsked string // a probe that must not run
	}{
		{name: "tp_btf_when_present", hook: sw, mode: TPBTF, prog: "tp_btf_switch", notAsked: "raw_tp"},
		{name: "raw_tp_without_tp_btf", hook: sw, missing: map[string]error{"tp_btf/sched_switch": errNo},
			mode: RawTP, prog: "raw_switch", why: "tp_btf: loading a probe program"},
		{name: "neither", hook: sw, missing: map[string]error{"tp_btf/sched_switch": errNo, "raw_tp": errNo},
			err: "supports neither tp_btf"},
		{name: "permission_stops_the_choice", hook: sw, missing: map[string]error{"tp_btf/sched_switch": unix.EPERM},
			err: "permission denied", notAsked: "raw_tp"},
		{name: "fentry_when_present", hook: fn, mode: Fentry, prog: "fentry_entry"},
		{name: "kprobe_without_trampolines", hook: fn, missing: map[string]error{"fentry/vfs_read": unix.EOPNOTSUPP},
			mode: Kprobe, prog: "kprobe_entry", why: "fentry"},
		{name: "no_kernel_function_hooks", hook: fn, missing: map[string]error{"fentry/vfs_read": unix.EOPNOTSUPP, "kprobe/vfs_read": os.ErrNotExist},
			err: "neither fentry"},
		{name: "fixed_mode", hook: TracepointHook("raw_syscalls", "sys_enter", "sys_enter"), mode: Tracepoint, prog: "sys_enter", notAsked: "raw_tp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeFeatures{missing: tc.missing}
			c, err := choose(tc.hook, f)
			if !testutil.WantErr(t, err, tc.err) && (c.Mode != tc.mode || c.Prog != tc.prog || !strings.Contains(c.Why, tc.why) || (tc.why == "" && c.Why != "")) {
				t.Errorf("chose %s %s (%q), want %s %s (%q)", c.Mode, c.Prog, c.Why, tc.mode, tc.prog, tc.why)
			}
			for _, a := range f.asked {
				if tc.notAsked != "" && a == tc.notAsked {
					t.Errorf("probed %s", a)
				}
			}
		})
	}
}

func progNames(s *ebpf.CollectionSpec) []string {
	var out []string
	for n := range s.Programs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestPlanLoadsOnlyChosen checks that the fallback is never in the loaded
// set when the preferred mode was chosen (so a verifier error in the
// preferred program cannot be papered over), and the other way round.
func TestPlanLoadsOnlyChosen(t *testing.T) {
	mk := func() *ebpf.CollectionSpec {
		return &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{
			"tp_btf_switch": {Name: "tp_btf_switch"}, "raw_switch": {Name: "raw_switch"},
			"tp_btf_waking": {Name: "tp_btf_waking"}, "raw_waking": {Name: "raw_waking"},
			"fentry_entry": {Name: "fentry_entry", AttachTo: "vfs_read"}, "kprobe_entry": {Name: "kprobe_entry"},
		}}
	}
	hooks := []Hook{BTFTracepoint("sched_switch", "tp_btf_switch", "raw_switch")}
	s := mk()
	if _, err := plan(s, hooks, &fakeFeatures{}); err != nil {
		t.Fatal(err)
	}
	if got := progNames(s); strings.Join(got, ",") != "tp_btf_switch" {
		t.Errorf("kept %v, want only tp_btf_switch", got)
	}
	s = mk()
	cs, err := plan(s, hooks, &fakeFeatures{missing: map[string]error{"tp_btf/sched_switch": errNo}})
	if err != nil {
		t.Fatal(err)
	}
	if got := progNames(s); strings.Join(got, ",") != "raw_switch" || cs[0].Mode != RawTP {
		t.Errorf("kept %v (%s), want only raw_switch", got, cs[0].Mode)
	}
	// fentry: one copy per function, each bound to its target.
	s = mk()
	cs, err = plan(s, []Hook{KernelFunc("vfs_read", "fentry_entry", "kprobe_entry", false, 0),
		KernelFunc("vfs_write", "fentry_entry", "kprobe_entry", false, 1)}, &fakeFeatures{})
	if err != nil {
		t.Fatal(err)
	}
	if got := progNames(s); strings.Join(got, ",") != "fentry_entry/vfs_read,fentry_entry/vfs_write" {
		t.Errorf("kept %v", got)
	}
	if s.Programs[cs[1].Prog].AttachTo != "vfs_write" {
		t.Errorf("second copy attaches to %q", s.Programs[cs[1].Prog].AttachTo)
	}
	if _, err := plan(mk(), []Hook{BTFTracepoint("sched_wakeup", "tp_btf_wakeup", "raw_wakeup")}, &fakeFeatures{}); err == nil {
		t.Error("a hook naming a missing program was accepted")
	}
}

func TestSessionMode(t *testing.T) {
	s := &Session{Choices: []Choice{{Mode: TPBTF}, {Mode: TPBTF}, {Mode: Uprobe}}}
	if m := s.Mode(); m != "tp_btf+uprobe" {
		t.Errorf("mode %q", m)
	}
}

func TestNotBuilt(t *testing.T) {
	_, err := Open(Tool{Name: "run-queue latency"})
	if err == nil || err.Error() != "run-queue latency is not built for "+runtime.GOARCH {
		t.Errorf("err %v", err)
	}
}

func TestPermissionIsOneLine(t *testing.T) {
	_, err := choose(BTFTracepoint("sched_switch", "a", "b"), &fakeFeatures{missing: map[string]error{"tp_btf/sched_switch": unix.EPERM}})
	if !errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "\n") {
		t.Errorf("err %q", err)
	}
}

func TestHasBPFCaps(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", true},
		{"CapEff:\t0000008000000000\n", true}, // CAP_BPF alone
		{"CapEff:\t0000000000200000\n", true}, // CAP_SYS_ADMIN alone
		{"CapEff:\t0000000000000000\n", false},
		{"Name:\tx\n", false},
	} {
		if got := hasBPFCaps(tc.status); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.status, got, tc.want)
		}
	}
}

func TestMissingCaps(t *testing.T) {
	for _, tc := range []struct {
		status, want string
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", ""},
		{"CapEff:\t0000000000200000\n", ""},                        // CAP_SYS_ADMIN covers both
		{"CapEff:\t000000c000000000\n", ""},                        // CAP_BPF + CAP_PERFMON
		{"CapEff:\t0000008000000000\n", "CAP_PERFMON"},             // CAP_BPF alone
		{"CapEff:\t0000004000000000\n", "CAP_BPF"},                 // CAP_PERFMON alone
		{"CapEff:\t0000000000000000\n", "CAP_BPF and CAP_PERFMON"}, // nobody
		{"Name:\tx\n", ""},                                         // unknown: let the kernel say
	} {
		if got := missingCaps(tc.status); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.status, got, tc.want)
		}
	}
}
