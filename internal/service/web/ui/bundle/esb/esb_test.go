package esb_test

import (
	"embed"
	"path/filepath"
	"testing"

	"github.com/sonde-dev/sonde/internal/service/web/ui"
	"github.com/sonde-dev/sonde/internal/service/web/ui/bundle/esb"
	whyui "github.com/sonde-dev/sonde/internal/service/whyweb/ui"
	"github.com/sonde-dev/sonde/internal/testutil"
)

// Each page's committed bundle is what its sources build to: run
// `go generate ./internal/service/<page>/ui` after changing its src/.
func TestBundlesCurrent(t *testing.T) {
	for _, page := range []struct {
		dir   string // the page's ui package, from the repository's root
		files embed.FS
	}{
		{"internal/service/web/ui", ui.Files},
		{"internal/service/whyweb/ui", whyui.Files},
	} {
		t.Run(page.dir, func(t *testing.T) {
			stale, err := esb.Stale(filepath.Join(testutil.RepoRoot(), page.dir), page.files.ReadFile)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range stale {
				t.Errorf("%s is stale: run go generate ./%s", name, page.dir)
			}
		})
	}
}
