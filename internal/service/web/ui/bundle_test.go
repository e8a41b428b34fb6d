package ui

import (
	"bytes"
	"testing"

	"github.com/sonde-dev/sonde/internal/service/web/ui/bundle/esb"
)

// The committed bundle is what the sources build to: run
// `go generate ./internal/service/web/ui` after changing src/.
func TestBundleCurrent(t *testing.T) {
	js, css, err := esb.Build(".")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"dist/app.js": js, "dist/app.css": css} {
		got, err := Files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./internal/service/web/ui", name)
		}
	}
}
