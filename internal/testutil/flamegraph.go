package testutil

// Checks of a flame graph page as Chromium leaves it (see DumpDOM), shared
// by the flame graph's own tests and the end-to-end ones.

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// SearchPercent is the share of samples a flame graph page (a DOM from
// DumpDOM, opened with ?s=REGEXP) says its search matched.
func SearchPercent(t testing.TB, page string) float64 {
	t.Helper()
	m := regexp.MustCompile(`data-percent="([0-9.]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no match percentage after search")
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// CheckZoomed checks a flame graph page opened with ?x=frame: frame fills
// the 1180 px width and gone, outside it, is not drawn.
func CheckZoomed(t testing.TB, page, frame, gone string) {
	t.Helper()
	z := regexp.MustCompile(`data-name="` + regexp.QuoteMeta(frame) + `"><title>[^<]*</title><rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindStringSubmatch(page)
	if z == nil {
		t.Fatalf("%s not found after zoom", frame)
	}
	if w, _ := strconv.ParseFloat(z[2], 64); w < 1170 {
		t.Errorf("zoomed %s width %.1f, want the full 1180", frame, w)
	}
	if strings.Contains(page, `data-name="`+gone+`"`) {
		t.Errorf("%s still shown after zooming into %s", gone, frame)
	}
}
