package commands

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/model/jsonout"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// TestJSONVocabulary: every key a command's --json documents can produce
// is in the vocabulary that docs/json.md describes.
func TestJSONVocabulary(t *testing.T) {
	for _, s := range Specs() {
		for _, v := range s.JSON {
			if bad := jsonout.Undocumented(v); len(bad) > 0 {
				t.Errorf("%s writes %T with keys missing from the vocabulary (internal/model/jsonout, docs/json.md): %v", s.Name, v, bad)
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
			if b, err := os.ReadFile(filepath.Join(docs, page)); err != nil || !strings.Contains(string(b), "sonde "+s.Name) {
				t.Errorf("%s: its page docs/%s does not show it (%v)", s.Name, page, err)
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
			if !remote.Classified(f.Name) {
				t.Errorf("%s --%s is not classified in internal/cmd/remote's flag table", c.Name(), f.Name)
			}
		})
	}
}
