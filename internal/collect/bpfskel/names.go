package bpfskel

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/cilium/ebpf"
)

// GoName turns a C name into the exported Go name bpfgen gives it, as
// bpf2go does: an underscore after a lower-case letter or digit is dropped
// and the next letter capitalised (tp_btf_switch → TpBtfSwitch);
// underscores between capitals stay (RUNQLAT_SWITCHES).
func GoName(c string) string {
	var b strings.Builder
	start := true // at the start of a word: the next letter is capitalised
	var prev rune
	for _, r := range c {
		switch {
		case r == '_' && (start || unicode.IsDigit(prev) || unicode.IsLower(prev)):
			start = true
			continue
		case unicode.IsLetter(r) && start:
			r = unicode.ToUpper(r)
		case r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r):
			continue
		}
		start = false
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

var mapType = reflect.TypeFor[*ebpf.Map]()

// AssignMaps fills the *ebpf.Map and *Counters fields of the struct dst
// points to (and of structs it embeds) from coll, loaded from spec (whose
// BTF names a *Counters field's counters): a field takes the map its
// `ebpf` tag names, or else the map whose GoName is the field's name
// (bpfgen's <stem>Maps). coll keeps owning the maps; every field must
// find one. Open does this for a tool's Maps and More.
func AssignMaps(spec *ebpf.CollectionSpec, coll *ebpf.Collection, dst any) error {
	return assign(spec, coll, dst)
}

func assign(spec *ebpf.CollectionSpec, coll *ebpf.Collection, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("assigning maps: %T is not a pointer to a struct", dst)
	}
	byGo := map[string]string{}
	for name := range coll.Maps {
		byGo[GoName(name)] = name
	}
	return assignMaps(v.Elem(), spec, coll, byGo)
}

func assignMaps(v reflect.Value, spec *ebpf.CollectionSpec, coll *ebpf.Collection, byGo map[string]string) error {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := assignMaps(v.Field(i), spec, coll, byGo); err != nil {
				return err
			}
			continue
		}
		if f.Type != mapType && f.Type != countersType {
			continue
		}
		name := byGo[f.Name]
		if tag := f.Tag.Get("ebpf"); tag != "" {
			name = tag
		}
		m := coll.Maps[name]
		if m == nil {
			return fmt.Errorf("assigning maps: the object has no map for field %s", f.Name)
		}
		if f.Type == mapType {
			v.Field(i).Set(reflect.ValueOf(m))
			continue
		}
		var ms *ebpf.MapSpec
		if spec != nil {
			ms = spec.Maps[name]
		}
		c, err := newCounters(name, ms, m)
		if err != nil {
			return fmt.Errorf("assigning maps: %w", err)
		}
		v.Field(i).Set(reflect.ValueOf(c))
	}
	return nil
}
