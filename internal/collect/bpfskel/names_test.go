package bpfskel

import "testing"

// TestGoName pins the names bpfgen gives C names: tools call the constants
// and fields it writes, and AssignMaps finds maps by them.
func TestGoName(t *testing.T) {
	for c, want := range map[string]string{
		"tp_btf_switch":          "TpBtfSwitch",
		"hist":                   "Hist",
		"unwind_rules":           "UnwindRules",
		"RUNQLAT_SWITCHES":       "RUNQLAT_SWITCHES",
		"unused_runqlat_counter": "UnusedRunqlatCounter",
		"_leading":               "Leading",
		"x86_64_regs":            "X8664Regs",
		"off_pc2":                "OffPc2",
		"a.b":                    "Ab",
	} {
		if got := GoName(c); got != want {
			t.Errorf("GoName(%q) = %q, want %q", c, got, want)
		}
	}
}
