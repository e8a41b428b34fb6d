package bpfskel

import (
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

func TestCountersKeys(t *testing.T) {
	e := &btf.Enum{Name: "demo_counter", Size: 4, Values: []btf.EnumValue{{Name: "DEMO_A", Value: 0}, {Name: "DEMO_B", Value: 1}, {Name: "DEMO_MAX", Value: 2}}}
	c := countersOf(e, nil)
	type good struct {
		B uint64 `json:"b" counter:"DEMO_B"`
		A uint64 `counter:"DEMO_A"`
	}
	keys, err := c.keys(reflect.TypeFor[*good]())
	if err != nil || !reflect.DeepEqual(keys, []uint32{1, 0}) {
		t.Fatalf("keys = %v, %v; want [1 0]", keys, err)
	}
	for _, tc := range []struct {
		name string
		dst  any
		want string
	}{
		{"unknown_member", &struct {
			A uint64 `counter:"DEMO_C"`
		}{}, "has no DEMO_C"},
		{"untagged", &struct{ A uint64 }{}, "field A"},
		{"not_uint64", &struct {
			A uint32 `counter:"DEMO_A"`
		}{}, "field A"},
		{"unexported", &struct {
			a uint64 `counter:"DEMO_A"`
		}{}, "field a"},
		{"not_pointer", good{}, "not a pointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.keys(reflect.TypeOf(tc.dst)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCountersNeedAnEnumKey(t *testing.T) {
	spec := func() (*ebpf.CollectionSpec, error) {
		return &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
			"plain": {Name: "plain", Key: &btf.Int{Name: "__u32", Size: 4}},
			"enum":  {Name: "enum", Key: &btf.Typedef{Name: "k", Type: &btf.Enum{Name: "e", Size: 4, Values: []btf.EnumValue{{Name: "E_A"}}}}},
		}}, nil
	}
	if err := CheckCounters(spec, "plain", &struct{}{}); err == nil || !strings.Contains(err.Error(), "ENUM_COUNTERS") {
		t.Fatalf("a u32-keyed map: err = %v", err)
	}
	if err := CheckCounters(spec, "enum", &struct {
		A uint64 `counter:"E_A"`
	}{}); err != nil {
		t.Fatalf("an enum-keyed map (through a typedef): %v", err)
	}
	if err := CheckCounters(spec, "none", &struct{}{}); err == nil {
		t.Fatal("a missing map: no error")
	}
}
