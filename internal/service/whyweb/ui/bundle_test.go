package ui

import (
	"testing"

	"github.com/sonde-dev/sonde/internal/service/web/ui/bundle/esb"
)

// The committed bundle is what the sources build to: run
// `go generate ./internal/service/whyweb/ui` after changing src/.
func TestWhyBundleCurrent(t *testing.T) {
	stale, err := esb.Stale(".", Files.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		t.Errorf("%s is stale: run go generate ./internal/service/whyweb/ui", name)
	}
}
