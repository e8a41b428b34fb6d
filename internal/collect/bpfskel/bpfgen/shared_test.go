package main

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The shared Go types stand for their C types only while both agree: a
// member moved, a struct grown or an enum value changed in bpf/include is
// refused at generation, not read wrong at run time.
func TestSharedTypesChecked(t *testing.T) {
	u16 := &btf.Int{Name: "__u16", Size: 2}
	u8x16 := &btf.Array{Type: &btf.Int{Name: "__u8", Size: 1}, Nelems: 16}
	conn := func(raddrAt btf.Bits) *btf.Struct {
		return &btf.Struct{Name: "sonde_conn", Size: 40, Members: []btf.Member{
			{Name: "family", Type: u16, Offset: 0}, {Name: "lport", Type: u16, Offset: 16},
			{Name: "rport", Type: u16, Offset: 32}, {Name: "pad", Type: u16, Offset: 48},
			{Name: "laddr", Type: u8x16, Offset: 64}, {Name: "raddr", Type: u8x16, Offset: raddrAt},
		}}
	}
	if err := shared["sonde_conn"].matches(conn(192)); err != nil {
		t.Errorf("sonde_conn as it is: %v", err)
	}
	if err := shared["sonde_conn"].matches(conn(200)); err == nil || !strings.Contains(err.Error(), "raddr") {
		t.Errorf("raddr moved: %v, want it named", err)
	}
	split := func(tid uint64) *btf.Enum {
		return &btf.Enum{Name: "sonde_split", Size: 4, Values: []btf.EnumValue{
			{Name: "SONDE_SPLIT_NONE", Value: 0}, {Name: "SONDE_SPLIT_PID", Value: 1}, {Name: "SONDE_SPLIT_TID", Value: tid},
		}}
	}
	if err := shared["sonde_split"].matches(split(2)); err != nil {
		t.Errorf("sonde_split as it is: %v", err)
	}
	if err := shared["sonde_split"].matches(split(3)); err == nil {
		t.Error("SONDE_SPLIT_TID renumbered: accepted")
	}
	if err := shared["sonde_slot"].matches(split(2)); err == nil {
		t.Error("an enum for the struct sonde_slot: accepted")
	}
}
