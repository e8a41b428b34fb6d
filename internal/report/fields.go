package report

import (
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
	"github.com/sonde-dev/sonde/internal/tracefs"
)

// FieldExtractor returns the values of the named tracepoint fields of a
// sample as one group key (datafile.ReadOptions.Extra), for --sort FIELD.
func FieldExtractor(names []string) func(m *model.Meta, s *model.Sample) string {
	var cache [][]tracefs.Field
	return func(m *model.Meta, s *model.Sample) string {
		if cache == nil {
			cache = tracefs.RecordedFields(m)
		}
		if int(s.Event) >= len(cache) {
			return ""
		}
		vals := make([]string, len(names))
		for i, n := range names {
			for _, f := range cache[s.Event] {
				if f.Name == n {
					vals[i] = f.String(s.Raw)
				}
			}
		}
		return strings.Join(vals, "\x00")
	}
}
