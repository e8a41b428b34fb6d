package commands

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestJSONVocabulary: every key a command's --json documents can produce
// is in the vocabulary that docs/json.md describes.
// A command's own keys (Spec.Keys) count for its documents; they never
// redefine a shared key, and two commands mean the same by the same key.
func TestJSONVocabulary(t *testing.T) {
	meaning := map[string]string{}
	for _, s := range Specs() {
		for k, m := range s.Keys {
			if _, shared := jsonout.Vocabulary[k]; shared {
				t.Errorf("%s declares %q, which the shared vocabulary already defines", s.Name, k)
			}
			if prev, ok := meaning[k]; ok && prev != m {
				t.Errorf("%s declares %q as %q; another command means %q", s.Name, k, m, prev)
			}
			meaning[k] = m
		}
		for _, v := range s.JSON {
			var bad []string
			for _, k := range jsonout.Undocumented(v) {
				if _, own := s.Keys[k]; !own {
					bad = append(bad, k)
				}
			}
			if len(bad) > 0 {
				t.Errorf("%s writes %T with keys missing from the vocabulary (internal/model/jsonout, docs/json.md, or its Spec.Keys): %v", s.Name, v, bad)
			}
		}
	}
}

// TestRegistryComplete walks the registry and the tree built from it: what
// a new command must bring besides its declaration is checked here, not
// left to memory.
func TestRegistryComplete(t *testing.T) {
	root := Root("dev")
	docs := filepath.Join(testutil.RepoRoot(), "docs")
	readme, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Specs() {
		c, _, err := root.Find([]string{s.Name})
		if err != nil || c.Name() != s.Name {
			t.Errorf("%s is declared but not in the tree", s.Name)
			continue
		}
		if s.Group != Setup {
			page := s.Page
			if page == "" {
				page = s.Name + ".md"
			}
			b, err := os.ReadFile(filepath.Join(docs, page))
			if err != nil || !strings.Contains(string(b), "sonde "+s.Name) {
				t.Errorf("%s: its page docs/%s does not show it (%v)", s.Name, page, err)
			}
			for k := range s.Keys {
				if !strings.Contains(string(b), "`"+k+"`") {
					t.Errorf("%s: its page docs/%s does not explain its JSON key `%s`", s.Name, page, k)
				}
			}
			if !strings.Contains(string(readme), "sonde "+s.Name) && !strings.Contains(string(readme), "`"+s.Name+"`") {
				t.Errorf("README.md never names %s", s.Name)
			}
		}
		if c.Flags().Lookup("json") != nil && len(s.JSON) == 0 {
			t.Errorf("%s has --json but declares no JSON document (Spec.JSON)", s.Name)
		}
		if s.Remote != (c.Annotations[remote.Offered] == "true") {
			t.Errorf("%s: Remote %v, but the tree says otherwise", s.Name, s.Remote)
		}
		if s.RunsCommand && !s.Remote {
			t.Errorf("%s: RunsCommand only matters to the agent; it is not Remote", s.Name)
		}
	}
}

// TestRemoteFlagsClassified: a command the agent runs takes only flags
// someone decided are safe over the wire.
func TestRemoteFlagsClassified(t *testing.T) {
	for _, c := range Root("dev").Commands() {
		if c.Annotations[remote.Offered] != "true" {
			continue
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !remote.Classified(f) {
				t.Errorf("%s --%s is not classified in internal/cmd/remote's flag table", c.Name(), f.Name)
			}
		})
	}
}

// TestSmoke runs each command's declared end-to-end case: it must exit 0
// and print something.
func TestSmoke(t *testing.T) {
	for _, s := range Specs() {
		if s.Smoke == nil {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			testutil.RequirePrivileged(t)
			r := testutil.MustRun(t, t.TempDir(), s.Smoke...)
			if strings.TrimSpace(r.Stdout) == "" {
				t.Errorf("sonde %s printed nothing", strings.Join(s.Smoke, " "))
			}
		})
	}
}

// TestBadInputDeclared runs each command's declared bad command lines: one
// line on stderr naming the cause, the declared exit status, no panic.
func TestBadInputDeclared(t *testing.T) {
	for _, s := range Specs() {
		for _, b := range s.BadInput {
			t.Run(b.Name, func(t *testing.T) {
				r := testutil.Run(t, t.TempDir(), append([]string{s.Name}, b.Args...)...)
				if r.Code == 0 || (b.Code != 0 && r.Code != b.Code) || strings.Contains(r.Stderr, "panic") {
					t.Fatalf("sonde %s %s: exit %d, want %d\n%s", s.Name, strings.Join(b.Args, " "), r.Code, b.Code, r.Stderr)
				}
				if lines := strings.Count(strings.TrimSpace(r.Stderr), "\n") + 1; lines != 1 {
					t.Errorf("stderr has %d lines, want one:\n%s", lines, r.Stderr)
				}
				if !regexp.MustCompile(b.Want).MatchString(r.Stderr) {
					t.Errorf("stderr %q, want %q", r.Stderr, b.Want)
				}
			})
		}
	}
}
