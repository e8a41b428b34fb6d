package web

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-dev/sonde/internal/service/web/ui"
)

// Export limits: the views a file holds answers for. Everything else
// (filters, time ranges, transforms) needs the server.
const (
	exportSandwiches = 40 // functions by total weight
	exportSources    = 10 // functions by self weight
)

// exportKey is how the page looks an answer up in an export: the view and
// its query, keys sorted, unescaped (ui/src/api.js builds the same).
func exportKey(view string, q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(view)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(k + "=" + q.Get(k))
	}
	return b.String()
}

// Export writes the UI as one HTML file with the answers for the
// unfiltered selection inlined: the flame tree, top table, time lanes,
// histograms and fields of every input, the sandwich of the heaviest
// functions, the source of the hottest, and each input's diff against the
// first. The page zooms, searches, sorts and switches views without a
// server; filters say they need `sonde serve`.
func (s *Server) Export(w io.Writer) error {
	answers := map[string]any{}
	add := func(view string, q url.Values) {
		v, err := s.view(view, q)
		if err == nil {
			answers[exportKey(view, q)] = v
		}
	}
	add("meta", url.Values{})
	for i, in := range s.inputs {
		f := strconv.Itoa(i)
		for _, v := range []string{"flame", "top", "time", "hist", "fields"} {
			add(v, url.Values{"f": {f}})
		}
		if i > 0 {
			add("diff", url.Values{"f": {f}, "base": {"0"}})
		}
		top := in.top(&filter{})
		rows := append([]TopRow(nil), top.Rows...)
		for n, r := range rows {
			if n < exportSources && r.Kind != kindOther {
				add("source", url.Values{"f": {f}, "fn": {r.Name}})
			}
		}
		sort.SliceStable(rows, func(a, b int) bool { return rows[a].Total > rows[b].Total })
		for n, r := range rows {
			if n < exportSandwiches && r.Kind != kindOther {
				add("sandwich", url.Values{"f": {f}, "fn": {r.Name}})
			}
		}
	}
	data, err := json.Marshal(answers) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("encoding the export: %w", err)
	}
	page, err := ui.Files.ReadFile("index.html")
	if err != nil {
		return err
	}
	js, err := ui.Files.ReadFile("dist/app.js")
	if err != nil {
		return err
	}
	css, err := ui.Files.ReadFile("dist/app.css")
	if err != nil {
		return err
	}
	script := strings.ReplaceAll(string(js), "</script", `<\/script`)
	style := strings.ReplaceAll(string(css), "</style", `<\/style`)
	hash := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}
	policy := "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(style) +
		"; img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
	out := strings.NewReplacer(
		`<link rel="stylesheet" href="app.css">`, `<meta http-equiv="Content-Security-Policy" content="`+policy+`"><style>`+style+`</style>`,
		`<script src="app.js"></script>`, `<script type="application/json" id="sonde-export">`+string(data)+`</script><script>`+script+`</script>`,
	).Replace(string(page))
	_, err = io.WriteString(w, out)
	return err
}
