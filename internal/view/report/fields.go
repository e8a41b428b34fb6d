package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/collect/tracefs"
	"github.com/sonde-dev/sonde/internal/model"
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

// ParseGraph reads perf report's -g: caller|callee|none, optionally
// ",MIN%" (the smallest branch shown, 0.5% by default).
func ParseGraph(s string) (order string, minPct float64, err error) {
	g, minStr, hasMin := strings.Cut(s, ",")
	switch g {
	case "caller", "callee", "none":
	case "graph", "fractal", "":
		g = "caller"
	default:
		return "", 0, fmt.Errorf("%q: want caller, callee or none, optionally ,MIN%%", s)
	}
	minPct = 0.5
	if hasMin {
		if minPct, err = strconv.ParseFloat(strings.TrimSuffix(minStr, "%"), 64); err != nil || minPct < 0 {
			return "", 0, fmt.Errorf("%q: bad minimum percent", s)
		}
	}
	return g, minPct, nil
}
