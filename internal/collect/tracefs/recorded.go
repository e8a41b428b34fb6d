package tracefs

import (
	"strings"

	"github.com/sonde-dev/sonde/internal/model"
)

// RecordedFields converts the tracepoint formats a recording stored (one
// per recorded event) into Fields that decode its samples' raw data.
func RecordedFields(m *model.Meta) [][]Field {
	out := make([][]Field, len(m.Events))
	for i, ev := range m.Events {
		for _, f := range ev.Fields {
			out[i] = append(out[i], Field{Name: f.Name, Type: f.Type, Offset: int(f.Offset), Size: int(f.Size),
				Signed: f.Signed, Kind: FieldKind(f.Kind), Common: strings.HasPrefix(f.Name, "common_")})
		}
	}
	return out
}
