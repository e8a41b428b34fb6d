// Package esb bundles the UI sources; the generator and the test that
// checks the committed bundle is current share it.
package esb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Build bundles dir/src/main.js and dir/src/style.css and returns the
// JavaScript and the CSS.
func Build(dir string) (js, css []byte, err error) {
	build := func(entry string) ([]byte, error) {
		r := api.Build(api.BuildOptions{
			EntryPoints:       []string{filepath.Join(dir, "src", entry)},
			Bundle:            true,
			MinifyWhitespace:  true,
			MinifySyntax:      true,
			MinifyIdentifiers: true,
			Format:            api.FormatIIFE,
			Target:            api.ES2020,
			Charset:           api.CharsetUTF8,
			LegalComments:     api.LegalCommentsNone,
			Write:             false,
			Outdir:            "out",
		})
		if len(r.Errors) > 0 {
			var msgs []string
			for _, m := range r.Errors {
				loc := ""
				if m.Location != nil {
					loc = fmt.Sprintf("%s:%d: ", m.Location.File, m.Location.Line)
				}
				msgs = append(msgs, loc+m.Text)
			}
			return nil, errors.New(strings.Join(msgs, "; "))
		}
		if len(r.OutputFiles) != 1 {
			return nil, fmt.Errorf("esbuild wrote %d files for %s", len(r.OutputFiles), entry)
		}
		return r.OutputFiles[0].Contents, nil
	}
	if js, err = build("main.js"); err != nil {
		return nil, nil, fmt.Errorf("bundling main.js: %w", err)
	}
	if css, err = build("style.css"); err != nil {
		return nil, nil, fmt.Errorf("bundling style.css: %w", err)
	}
	return js, css, nil
}

// Stale names the files of dir/dist that differ from what its sources
// build to, read through read (the package's embedded files): each page's
// test that its committed bundle is current.
func Stale(dir string, read func(name string) ([]byte, error)) ([]string, error) {
	js, css, err := Build(dir)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, f := range []struct {
		name string
		want []byte
	}{{"dist/app.js", js}, {"dist/app.css", css}} {
		got, err := read(f.name)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(got, f.want) {
			stale = append(stale, f.name)
		}
	}
	return stale, nil
}

// Write writes the bundle to dir/dist.
func Write(dir string) error {
	js, css, err := Build(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "dist", "app.js"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "dist", "app.css"), css, 0o644)
}
