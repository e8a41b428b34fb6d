// Command bpfgen compiles a BPF tool's C with clang and writes, beside the
// object, the Go that the tool needs and nothing more: the C types named by
// -type, the names of its programs, maps and globals as constants
// (<stem>Prog<Name>, <stem>Map<Name>, <stem>Var<Name>), a <stem>Maps
// struct for bpfskel.Tool.Maps (a map keyed by an enum, ENUM_COUNTERS, is
// a *bpfskel.Counters read by the enum's member names, so the enum needs
// no Go declaration), and load<Stem>, which reads the embedded object
// through bpfskel (bpfskel.Tool.Spec).
//
// bpf2go writes the same types but also a loader, object, program and
// spec structs with their Close methods: the same ~150 lines in every
// package, which bpfskel already does once for all tools. bpfgen reuses
// bpf2go's compile step (cilium/ebpf/cmd/bpf2go/gen) and accepts its
// command line, so a package moves over by changing its go:generate line:
//
//	//go:generate go tool bpfgen -type cpudist_total cpudist cpudist.bpf.c
//
// A field whose C type comes from a shared header and has a Go declaration
// of its own (shared: struct sonde_conn is bpfmaps.Conn) is written as that
// Go type, after its layout is checked against the object's, rather than
// as the same anonymous struct in every tool.
//
// Defaults are sonde's: clang, -O2 -g -Wall -Werror, -I<module>/bpf/include,
// and one little-endian object for every architecture (-target bpfel);
// name -target amd64,arm64 for objects that read registers.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/cmd/bpf2go/gen"

	"github.com/sonde-dev/sonde/internal/collect/bpfmaps"
	"github.com/sonde-dev/sonde/internal/collect/bpfskel"
)

// sharedType is the Go declaration of a C type of bpf/include.
type sharedType struct {
	pkg   string // its package's import path
	name  string // as the generated code spells it
	value any    // a struct's zero value, whose layout must be the C type's
	// members are an enum's values in Go, by C name: the object's must
	// be the same.
	members map[string]uint64
}

// shared are the C types of bpf/include that the tools send inside their
// events, or set as options, and read with a shared Go type, by C name.
var shared = map[string]sharedType{
	"sonde_conn":      {pkg: "github.com/sonde-dev/sonde/internal/collect/bpfmaps", name: "bpfmaps.Conn", value: bpfmaps.Conn{}},
	"sonde_stack_key": {pkg: "github.com/sonde-dev/sonde/internal/collect/bpfskel", name: "bpfskel.StackKey", value: bpfskel.StackKey{}},
	"sonde_slot":      {pkg: "github.com/sonde-dev/sonde/internal/collect/bpfskel", name: "bpfskel.SlotKey", value: bpfskel.SlotKey{}},
	"sonde_hist_sums": {pkg: "github.com/sonde-dev/sonde/internal/collect/bpfskel", name: "bpfskel.HistSums", value: bpfskel.HistSums{}},
	"sonde_split": {pkg: "github.com/sonde-dev/sonde/internal/collect/bpfskel", name: "bpfskel.Split", members: map[string]uint64{
		"SONDE_SPLIT_NONE": uint64(bpfskel.SplitNone), "SONDE_SPLIT_PID": uint64(bpfskel.SplitPid), "SONDE_SPLIT_TID": uint64(bpfskel.SplitTid),
	}},
}

type typeNames []string

func (t *typeNames) String() string     { return strings.Join(*t, ",") }
func (t *typeNames) Set(s string) error { *t = append(*t, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bpfgen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bpfgen", flag.ContinueOnError)
	cc := fs.String("cc", "clang", "C compiler")
	cflags := fs.String("cflags", "-O2 -g -Wall -Werror", "compiler flags")
	targets := fs.String("target", "bpfel", "comma-separated bpf2go targets (bpfel, amd64, arm64, ...)")
	var types typeNames
	fs.Var(&types, "type", "a C type to declare in Go (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return errors.New("usage: bpfgen [-type T]... stem source.bpf.c [-- cflags]")
	}
	stem, source := rest[0], rest[1]
	extra := rest[2:]
	if len(extra) > 0 && extra[0] == "--" {
		extra = extra[1:]
	}
	pkg := os.Getenv("GOPACKAGE")
	if pkg == "" {
		return errors.New("GOPACKAGE is not set: run bpfgen from go generate")
	}
	include, err := includeDir()
	if err != nil {
		return err
	}
	flags := append(strings.Fields(*cflags), "-I"+include)
	flags = append(flags, extra...)
	for _, id := range strings.Split(*targets, ",") {
		tgt, arches, err := gen.FindTarget(id)
		if err != nil {
			return fmt.Errorf("target %s: %w", id, err)
		}
		out := strings.ToLower(stem) + "_" + tgt.Suffix()
		if err := build(*cc, flags, source, out, tgt); err != nil {
			return err
		}
		var constraint string
		if c := arches.Constraint(); c != nil {
			constraint = c.String()
		}
		hash, err := sourceHash(source, []string{include})
		if err != nil {
			return err
		}
		if err := write(pkg, stem, out, constraint, hash, types); err != nil {
			return err
		}
	}
	return nil
}

// includeDir is bpf/include of the module being generated (found by
// walking up to go.mod), relative so the object's line info does not
// depend on where the tree is checked out; gen.go lines need not spell it.
func includeDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Rel(dir, filepath.Join(d, "bpf", "include"))
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

func build(cc string, flags []string, source, out string, tgt gen.Target) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	src, err := filepath.Abs(source)
	if err != nil {
		return err
	}
	strip := "llvm-strip" + strings.TrimPrefix(cc, "clang")
	err = gen.Compile(gen.CompileArgs{CC: cc, Strip: strip, Flags: flags, Target: tgt,
		Workdir: wd, Source: src, Dest: filepath.Join(wd, out+".o")})
	if err != nil {
		return fmt.Errorf("compiling %s: %w", source, err)
	}
	return nil
}

// write emits <out>.go for the object <out>.o.
func write(pkg, stem, out, constraint, hash string, names []string) error {
	spec, err := ebpf.LoadCollectionSpec(out + ".o")
	if err != nil {
		return fmt.Errorf("reading %s.o: %w", out, err)
	}
	var types []btf.Type
	for _, n := range names {
		t, err := spec.Types.AnyTypeByName(n)
		if err != nil {
			return fmt.Errorf("looking up type %s: %w", n, err)
		}
		types = append(types, t)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by bpfgen (internal/collect/bpfskel/bpfgen) from %s.o; DO NOT EDIT.\n", out)
	fmt.Fprintf(&b, "%s%s\n", sourcePrefix, hash)
	if constraint != "" {
		fmt.Fprintf(&b, "//go:build %s\n", constraint)
	}
	decls, imports, err := declarations(stem, spec.Types, types)
	if err != nil {
		return err
	}
	imports = append(imports, "github.com/sonde-dev/sonde/internal/collect/bpfskel")
	slices.Sort(imports)
	fmt.Fprintf(&b, "\npackage %s\n\nimport (\n\t_ \"embed\"\n\t\"structs\"\n\n\t\"github.com/cilium/ebpf\"\n\n", pkg)
	for _, imp := range slices.Compact(imports) {
		fmt.Fprintf(&b, "\t%q\n", imp)
	}
	b.WriteString(")\n\n")
	b.WriteString(decls)

	var maps, progs, vars []string
	for n := range spec.Maps {
		if !strings.HasPrefix(n, ".") {
			maps = append(maps, n)
		}
	}
	for n := range spec.Programs {
		progs = append(progs, n)
	}
	for n := range spec.Variables {
		vars = append(vars, n)
	}
	slices.Sort(maps)
	slices.Sort(progs)
	slices.Sort(vars)
	// Name lists, one line per kind and the struct on one line: they only
	// say what the object holds.
	b.WriteString("// Names of the object's maps, programs and globals.\n")
	for _, g := range []struct {
		kind  string
		names []string
	}{{"Map", maps}, {"Prog", progs}, {"Var", vars}} {
		if len(g.names) == 0 {
			continue
		}
		var ids, strs []string
		for _, n := range g.names {
			ids = append(ids, stem+g.kind+bpfskel.GoName(n))
			strs = append(strs, strconv.Quote(n))
		}
		fmt.Fprintf(&b, "const %s = %s\n", strings.Join(ids, ", "), strings.Join(strs, ", "))
	}
	// A map keyed by an enum is a counter array (ENUM_COUNTERS): its field
	// is a *bpfskel.Counters, read by the enum's member names, so the
	// enum needs no Go declaration.
	var plain, counters []string
	for _, n := range maps {
		if _, ok := btf.UnderlyingType(spec.Maps[n].Key).(*btf.Enum); ok {
			counters = append(counters, bpfskel.GoName(n))
		} else {
			plain = append(plain, bpfskel.GoName(n))
		}
	}
	var fields []string
	if len(plain) > 0 {
		fields = append(fields, strings.Join(plain, ", ")+" *ebpf.Map")
	}
	if len(counters) > 0 {
		fields = append(fields, strings.Join(counters, ", ")+" *bpfskel.Counters")
	}
	fmt.Fprintf(&b, "\n// %sMaps is filled by bpfskel.Open (Tool.Maps): field X holds the map\n// whose bpfskel.GoName is X.\ntype %sMaps struct{ %s }\n\n", stem, stem, strings.Join(fields, "; "))

	fmt.Fprintf(&b, "//go:embed %s.o\nvar %sObject []byte\n\n", out, stem)
	fmt.Fprintf(&b, "// load%s reads the embedded object (bpfskel.Tool.Spec).\nfunc load%s() (*ebpf.CollectionSpec, error) { return bpfskel.LoadSpec(%q, %sObject) }\n",
		upperFirst(stem), upperFirst(stem), stem, stem)

	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("formatting %s.go: %w\n%s", out, err, b.Bytes())
	}
	if !strings.Contains(string(src), "structs.HostLayout") {
		src = bytes.Replace(src, []byte("\t\"structs\"\n"), nil, 1)
	}
	return os.WriteFile(out+".go", src, 0o644)
}

// declarations writes a Go declaration per C type, named <stem><Type> and
// sorted by name so the output is stable, and returns the packages of the
// shared types they use.
func declarations(stem string, all *btf.Spec, types []btf.Type) (string, []string, error) {
	names := map[btf.Type]string{}
	var imports []string
	for c, g := range shared {
		t, err := all.AnyTypeByName(c)
		if err != nil {
			continue // the object does not use it
		}
		if err := g.matches(t); err != nil {
			return "", nil, fmt.Errorf("%s is no longer %s: %w", g.name, c, err)
		}
		names[t] = g.name
		imports = append(imports, g.pkg)
	}
	var order []btf.Type
	for _, t := range types {
		if _, ok := names[t]; ok {
			continue
		}
		names[t] = stem + bpfskel.GoName(t.TypeName())
		order = append(order, t)
	}
	slices.SortFunc(order, func(a, b btf.Type) int { return strings.Compare(names[a], names[b]) })
	gf := &btf.GoFormatter{Names: names, Identifier: bpfskel.GoName}
	var b strings.Builder
	for i, t := range order {
		if i > 0 && names[t] == names[order[i-1]] {
			return "", nil, fmt.Errorf("two types are named %s", names[t])
		}
		d, err := gf.TypeDeclaration(names[t], t)
		if err != nil {
			return "", nil, fmt.Errorf("declaring %s: %w", names[t], err)
		}
		b.WriteString(d + "\n\n")
	}
	// Only the shared types the declarations name are imported.
	imports = slices.DeleteFunc(imports, func(pkg string) bool {
		return !strings.Contains(b.String(), " "+pkg[strings.LastIndex(pkg, "/")+1:]+".")
	})
	return b.String(), imports, nil
}

// matches checks the C type t against g: an enum's values, or a struct's
// layout.
func (g sharedType) matches(t btf.Type) error {
	if g.members == nil {
		return sameLayout(t, reflect.TypeOf(g.value))
	}
	e, ok := btf.UnderlyingType(t).(*btf.Enum)
	if !ok {
		return fmt.Errorf("not an enum")
	}
	if len(e.Values) != len(g.members) {
		return fmt.Errorf("%d values, not %d", len(e.Values), len(g.members))
	}
	for _, v := range e.Values {
		if want, ok := g.members[v.Name]; !ok || want != v.Value {
			return fmt.Errorf("%s is %d", v.Name, v.Value)
		}
	}
	return nil
}

// sameLayout checks that the Go struct g lays out the C struct t: the same
// size, and each member at the same offset with the same size, as the
// field bpfskel.GoName names.
func sameLayout(t btf.Type, g reflect.Type) error {
	st, ok := btf.UnderlyingType(t).(*btf.Struct)
	if !ok {
		return fmt.Errorf("not a struct")
	}
	if uintptr(st.Size) != g.Size() {
		return fmt.Errorf("%d bytes, not %d", st.Size, g.Size())
	}
	for _, m := range st.Members {
		f, ok := g.FieldByName(bpfskel.GoName(m.Name))
		if !ok {
			return fmt.Errorf("no field for member %s", m.Name)
		}
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		if f.Offset != uintptr(m.Offset.Bytes()) || f.Type.Size() != uintptr(size) {
			return fmt.Errorf("member %s at byte %d (%d bytes), field at %d (%d bytes)", m.Name, m.Offset.Bytes(), size, f.Offset, f.Type.Size())
		}
	}
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
