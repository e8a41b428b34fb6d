package web

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// Every key the API writes is in the vocabulary of docs/json.md.
func TestJSONVocabulary(t *testing.T) {
	for _, v := range []any{MetaDoc{}, TreeDoc{}, TopDoc{}, SandwichDoc{}, TimeDoc{}, SourceDoc{}, HistDoc{}, FieldsDoc{}} {
		if bad := jsonout.Undocumented(v); len(bad) > 0 {
			t.Errorf("%T writes keys missing from the vocabulary (internal/model/jsonout, docs/json.md): %v", v, bad)
		}
	}
}
