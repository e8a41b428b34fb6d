package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

type rep struct {
	Count int `json:"count"`
}

func (r rep) WriteText(w io.Writer)       { fmt.Fprintf(w, "%d things\n", r.Count) }
func (r rep) WriteJSON(w io.Writer) error { return jsonout.Write(w, r) }

func TestForms(t *testing.T) {
	var b bytes.Buffer
	w := New(&b, true)
	w.Interval(rep{1})
	w.Interval(rep{2})
	if err := w.Final(rep{3}); err != nil {
		t.Fatal(err)
	}
	// Intervals are one line each; the final report is a whole document.
	lines := strings.SplitN(b.String(), "\n", 3)
	if lines[0] != `{"count":1}` || lines[1] != `{"count":2}` {
		t.Errorf("interval lines %q", lines[:2])
	}
	var last rep
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil || last.Count != 3 || !strings.Contains(lines[2], "\n  ") {
		t.Errorf("final document %q: %v", lines[2], err)
	}
	// After interval lines, the final report is a line too.
	b.Reset()
	w = New(&b, true)
	w.Lines = true
	w.Interval(rep{1})
	w.Final(rep{2})
	if b.String() != "{\"count\":1}\n{\"count\":2}\n" {
		t.Errorf("lines %q", b.String())
	}
	b.Reset()
	w = New(&b, false)
	w.Interval(rep{1})
	w.Final(rep{2})
	if b.String() != "1 things\n2 things\n" {
		t.Errorf("text %q", b.String())
	}
}
