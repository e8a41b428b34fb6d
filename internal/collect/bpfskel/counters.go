package bpfskel

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
)

// Counters is a per-CPU array of counters whose key is a C enum
// (ENUM_COUNTERS in bpf/include/sonde_maps.h). The enum is declared once,
// in C: Read fills a Go struct by the members' names, looked up in the
// object's BTF, so no tool repeats the enum's values or maps indexes to
// fields by hand. bpfgen types such a map's field *Counters; Open fills it.
type Counters struct {
	Map   *ebpf.Map
	index map[string]uint32 // enum member → key
}

var countersType = reflect.TypeFor[*Counters]()

// newCounters reads the member names of the enum that keys spec.
func newCounters(name string, spec *ebpf.MapSpec, m *ebpf.Map) (*Counters, error) {
	if spec == nil {
		return nil, fmt.Errorf("map %s is a counter array: its names come from the object's spec (bpfskel.Open)", name)
	}
	e, _ := btf.UnderlyingType(spec.Key).(*btf.Enum)
	if e == nil {
		return nil, fmt.Errorf("map %s is not keyed by an enum (declare it with ENUM_COUNTERS)", name)
	}
	return countersOf(e, m), nil
}

// Enum is the values of the object's C enum name by member name, from its
// BTF (KEEP_TYPE keeps an enum no map or program names): Go takes a value
// by its C name, so no enum is written a second time in Go.
func Enum(spec *ebpf.CollectionSpec, name string) (map[string]uint64, error) {
	var e *btf.Enum
	if err := spec.Types.TypeByName(name, &e); err != nil {
		return nil, fmt.Errorf("reading enum %s from the object's BTF: %w", name, err)
	}
	values := make(map[string]uint64, len(e.Values))
	for _, v := range e.Values {
		values[v.Name] = v.Value
	}
	return values, nil
}

func countersOf(e *btf.Enum, m *ebpf.Map) *Counters {
	c := &Counters{Map: m, index: map[string]uint32{}}
	for _, v := range e.Values {
		c.index[v.Name] = uint32(v.Value)
	}
	return c
}

// Read sets every field of the struct dst points to, each a uint64 tagged
// `counter:"NAME"` with NAME a member of the map's enum, to that counter
// summed over CPUs. A field without a tag, or a name the enum lacks, is an
// error: the Go side cannot drift from the C one unnoticed.
func (c *Counters) Read(dst any) error {
	keys, err := c.keys(reflect.TypeOf(dst))
	if err != nil {
		return err
	}
	v := reflect.ValueOf(dst).Elem()
	for i, k := range keys {
		v.Field(i).SetUint(bpfmaps.SumPerCPU(c.Map, k))
	}
	return nil
}

// keys is the map key of each field of *t.
func (c *Counters) keys(t reflect.Type) ([]uint32, error) {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("reading counters: %v is not a pointer to a struct", t)
	}
	t = t.Elem()
	keys := make([]uint32, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("counter")
		if name == "" || f.Type.Kind() != reflect.Uint64 || !f.IsExported() {
			return nil, fmt.Errorf("reading counters into %v: field %s is not an exported uint64 tagged `counter:\"NAME\"`", t, f.Name)
		}
		k, ok := c.index[name]
		if !ok {
			return nil, fmt.Errorf("reading counters into %v: the map's enum has no %s", t, name)
		}
		keys[i] = k
	}
	return keys, nil
}

// CheckCounters says whether Read would fill the struct dst points to from
// the counter map name of the object load reads (bpfgen's load<Stem>): a
// test's check, without root, that a tool's Go struct names only members
// of its C enum.
func CheckCounters(load func() (*ebpf.CollectionSpec, error), name string, dst any) error {
	spec, err := load()
	if err != nil {
		return err
	}
	ms := spec.Maps[name]
	if ms == nil {
		return errors.New("the object has no map " + name)
	}
	c, err := newCounters(name, ms, nil)
	if err != nil {
		return err
	}
	_, err = c.keys(reflect.TypeOf(dst))
	return err
}
