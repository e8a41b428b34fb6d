// Package layers states how sonde's packages may depend on each other, and
// its test holds the tree to it. The folders under internal/ are layers,
// from the bottom:
//
//	model      the data: profiles, stacks, histograms, the JSON vocabulary
//	collect    the kernel and /proc: perf events, tracefs, the BPF skeleton,
//	           probes, the unwinder and its tables, the end of a run
//	symbolize  addresses → names, and the builder that turns records into a model
//	format     files and wire formats: sonde data files, perf.data, pprof, outputs, streams
//	tools      every measuring tool (the sources): record, stat, latency and
//	           the BPF tools, each with its .bpf.c beside its loader
//	view       renderings of models and tool results: reports, flame graphs, tables
//	service    long-running services: continuous profiling, metrics, the web view, loading files
//	cmd        the command layer: flags, checks, runs; the only users of cobra and pflag
//
// A package may import its own layer and the layers below it, never one
// above. internal/testutil serves tests of every layer.
//
// Its tests also keep the tree's hygiene: no build output tracked by git
// (test binaries, gmon.out, profiles, perf recordings, files over 2 MB other
// than BPF objects and fixtures), and a package map in docs/internals.md
// that matches go list.
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Module is sonde's module path.
const Module = "github.com/sonde-dev/sonde"

// Order lists the layers from the bottom.
var Order = []string{"model", "collect", "symbolize", "format", "tools", "view", "service", "cmd"}

// onlyCmd are imports only the command layer may use.
var onlyCmd = []string{"github.com/spf13/cobra", "github.com/spf13/pflag"}

// Of returns the layer of a package of the module ("" for one outside the
// layers: testutil, bench, this package), and false for a package in
// internal/ that no layer holds.
func Of(pkg string) (layer string, ok bool) {
	rel, found := strings.CutPrefix(pkg, Module+"/")
	if !found {
		return "", true
	}
	if strings.HasPrefix(rel, "cmd/") {
		return "cmd", true
	}
	parts := strings.Split(rel, "/")
	if parts[0] != "internal" || len(parts) < 2 {
		return "", true
	}
	switch parts[1] {
	case "testutil", "layers":
		return "", true
	}
	for _, l := range Order {
		if parts[1] == l {
			return l, true
		}
	}
	return "", false
}

func rank(layer string) int {
	for i, l := range Order {
		if l == layer {
			return i
		}
	}
	return -1
}

// Violations lists the imports of graph (package → its non-test imports)
// that break the layering, one line each, sorted.
func Violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		from, ok := Of(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("%s is in no layer (internal/%s)", pkg, strings.Join(Order, ", internal/")))
			continue
		}
		for _, imp := range imports {
			if from != "cmd" && from != "" && slicesHasPrefix(onlyCmd, imp) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s: only the command layer parses command lines", pkg, from, imp))
				continue
			}
			to, ok := Of(imp)
			if !ok || from == "" || to == "" {
				continue
			}
			if rank(to) > rank(from) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): a lower layer imports a higher one", pkg, from, imp, to))
			}
		}
	}
	sort.Strings(out)
	return out
}

func slicesHasPrefix(prefixes []string, s string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}
