// Package ui is the page `sonde why --web` shows: index.html and the
// bundle esbuild makes of src/ (dist/, committed as the serve page's is, so
// a plain go build embeds it and needs neither node nor esbuild). It shares
// the serve page's DOM helpers (../../web/ui/src/dom.js) through the bundle.
package ui

import "embed"

//go:generate go run ../../web/ui/bundle

// Files holds index.html and dist/app.js, dist/app.css.
//
//go:embed index.html dist/app.js dist/app.css
var Files embed.FS
