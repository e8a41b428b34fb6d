package jsonout

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestKeys(t *testing.T) {
	type inner struct {
		A int `json:"a"`
		B int `json:"-"`
	}
	type doc struct {
		Run
		Rows  []inner         `json:"rows"`
		ByKey map[string]Task `json:"by_key,omitempty"`
		skip  int
	}
	got := strings.Join(Keys(reflect.TypeOf(doc{})), " ")
	want := "a by_key comm command duration_ns exit_code pid rows target tid"
	if got != want {
		t.Errorf("Keys = %q, want %q", got, want)
	}
}

// docs/json.md lists every key of the vocabulary, and no other.
func TestVocabularyDocumented(t *testing.T) {
	f, err := os.Open(filepath.Join(testutil.RepoRoot(), "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")
	documented := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			documented[m[1]] = true
		}
	}
	for k := range Vocabulary {
		if !documented[k] {
			t.Errorf("key %q is in the vocabulary but not in docs/json.md", k)
		}
	}
	for k := range documented {
		if _, ok := Vocabulary[k]; !ok {
			t.Errorf("docs/json.md documents %q, which is not in the vocabulary", k)
		}
	}
}
