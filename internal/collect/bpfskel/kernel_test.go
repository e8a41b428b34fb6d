package bpfskel

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// switchSpec is an object with a tp_btf and a raw_tp program for
// sched_switch and a counter map; bad makes the tp_btf program one the
// verifier rejects (it returns R0 without setting it).
func switchSpec(bad bool) func() (*ebpf.CollectionSpec, error) {
	return func() (*ebpf.CollectionSpec, error) {
		ok := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
		btf := ok
		if bad {
			btf = asm.Instructions{asm.Return()}
		}
		return &ebpf.CollectionSpec{
			Maps: map[string]*ebpf.MapSpec{
				"counters": {Name: "counters", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			},
			Programs: map[string]*ebpf.ProgramSpec{
				"tp_btf_switch": {Name: "tp_btf_switch", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp,
					AttachTo: "sched_switch", Instructions: btf, License: "GPL"},
				"raw_switch": {Name: "raw_switch", Type: ebpf.RawTracepoint, Instructions: ok, License: "GPL"},
			},
		}, nil
	}
}

type testMaps struct {
	Counters *ebpf.Map `ebpf:"counters"`
}

// TestKernelVerifierErrorIsLoud loads a tool whose preferred program the
// verifier rejects: Open must fail with the verifier's error, not attach
// the raw_tp fallback.
func TestKernelVerifierErrorIsLoud(t *testing.T) {
	testutil.RequirePrivileged(t)
	if err := Kernel.TPBTF("sched_switch"); err != nil {
		t.Skipf("no tp_btf here (%v): the fallback is the right choice", err)
	}
	hooks := []Hook{BTFTracepoint("sched_switch", "tp_btf_switch", "raw_switch")}
	_, err := Open(Tool{Name: "test", Spec: switchSpec(true), Hooks: hooks})
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("want the verifier's error, got %v", err)
	}

	var maps testMaps
	s, err := Open(Tool{Name: "test", Spec: switchSpec(false), Hooks: hooks, Maps: &maps})
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != "tp_btf" || maps.Counters == nil {
		t.Errorf("mode %q, map %v", s.Mode(), maps.Counters)
	}
	s.Close()
	if maps.Counters.FD() >= 0 {
		t.Errorf("the map is still open after Close")
	}
}

// TestKernelFallbackWhenProbeFails forces the tp_btf probe to fail: the
// raw_tp program is loaded and attached, the tp_btf one never loaded
// (its verifier error cannot surface).
func TestKernelFallbackWhenProbeFails(t *testing.T) {
	testutil.RequirePrivileged(t)
	f := &fakeFeatures{missing: map[string]error{"tp_btf/sched_switch": errNo}}
	s, err := Open(Tool{Name: "test", Spec: switchSpec(true), Features: f,
		Hooks: []Hook{BTFTracepoint("sched_switch", "tp_btf_switch", "raw_switch")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Mode() != "raw_tp" || s.Choices[0].Why == "" {
		t.Errorf("mode %q (%q), want raw_tp with a reason", s.Mode(), s.Choices[0].Why)
	}
}
