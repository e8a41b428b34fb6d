package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

// goList returns the module's packages and their non-test imports.
func goList(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = testutil.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		graph[f[0]] = f[1:]
	}
	return graph
}

// TestTreeKeepsLayers: no package of the tree imports a layer above its
// own, and only the command layer imports cobra.
func TestTreeKeepsLayers(t *testing.T) {
	for _, v := range Violations(goList(t)) {
		t.Error(v)
	}
}

// TestViolationsFound: the check fails on wrong imports (so a green
// TestTreeKeepsLayers means something).
func TestViolationsFound(t *testing.T) {
	m := Module + "/internal/"
	cases := []struct {
		name  string
		graph map[string][]string
		want  string // "" for none
	}{
		{"tool_imports_cli", map[string][]string{m + "tools/profile": {m + "cmd/cli"}}, "tools/profile (tools) imports " + m + "cmd/cli (cmd)"},
		{"tool_imports_cobra", map[string][]string{m + "tools/memleak": {"github.com/spf13/cobra"}}, "only the command layer parses command lines"},
		{"view_imports_service", map[string][]string{m + "view/report": {m + "service/web"}}, "a lower layer imports a higher one"},
		{"model_imports_collect", map[string][]string{m + "model": {m + "collect/perf"}}, "model (model) imports"},
		{"package_outside_layers", map[string][]string{m + "misc": nil}, "is in no layer"},
		{"down_is_fine", map[string][]string{m + "cmd/commands": {m + "tools/profile", "github.com/spf13/cobra"}, m + "view/top": {m + "tools/cputime", m + "model"}}, ""},
		{"testutil_anywhere", map[string][]string{m + "model": {m + "testutil"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Violations(c.graph)
			if c.want == "" {
				if len(v) > 0 {
					t.Errorf("violations %q, want none", v)
				}
				return
			}
			if len(v) != 1 || !strings.Contains(v[0], c.want) {
				t.Errorf("violations %q, want one saying %q", v, c.want)
			}
		})
	}
}
