// Package jsonout is the one JSON vocabulary every sonde view writes: the
// same quantity has the same key and unit in every command (a duration is
// always an integer `duration_ns`, a process always `pid` and `comm`), so
// a script written against one command reads the others. docs/json.md
// describes every key; Undocumented lets a test hold each view to it.
package jsonout

import (
	"encoding/json"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Nanos is a duration or timestamp in integer nanoseconds; keys holding it
// end in _ns.
type Nanos int64

// NS converts a time.Duration.
func NS(d time.Duration) Nanos { return Nanos(d) }

// Task names the process or thread a row belongs to.
type Task struct {
	PID  int    `json:"pid,omitempty"`
	TID  int    `json:"tid,omitempty"`
	Comm string `json:"comm,omitempty"`
}

// Frame is one frame of a stack in a report: its function, its object,
// and whether it is the kernel's.
type Frame struct {
	Sym    string `json:"sym"`
	DSO    string `json:"dso"`
	Kernel bool   `json:"kernel"`
}

// Run describes the measurement a document came from; every top-level
// document that is not a bare list embeds it.
type Run struct {
	Command    string `json:"command"`          // the sonde command: "stat", "report", …
	Target     string `json:"target,omitempty"` // what was measured, as the text view names it
	DurationNS Nanos  `json:"duration_ns"`
	ExitCode   *int   `json:"exit_code,omitempty"` // the traced command's, when one ran
}

// Write writes v as one indented document.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Line writes v as one line: the form for streams and per-interval output,
// where every line is a complete document (JSON Lines).
func Line(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// Keys lists every JSON object key a value of type t can produce, following
// struct fields (embedded ones inline), pointers, slices, arrays and map
// values. Map keys are data, not vocabulary, and are not listed.
func Keys(t reflect.Type) []string {
	seen := map[string]bool{}
	visited := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || visited[t] {
			return
		}
		visited[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			seen[name] = true
			walk(f.Type)
		}
	}
	walk(t)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Undocumented returns the keys of v's type that are not in Vocabulary.
func Undocumented(v any) []string {
	var out []string
	for _, k := range Keys(reflect.TypeOf(v)) {
		if _, ok := Vocabulary[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}
