// Package ui is the page `sonde serve` shows: index.html and the bundle
// esbuild makes of src/ (dist/, committed like the BPF objects, so a plain
// go build embeds it and needs neither node nor esbuild).
//
// The sources are plain modern JavaScript modules, not TypeScript: without
// node there is no tsc, and esbuild strips types without checking them, so
// TypeScript would add a build step and no safety. The flame graph, icicle
// and time lanes are drawn on a canvas 2D context: a DOM node per frame
// does not stay fast past tens of thousands of frames.
package ui

import "embed"

//go:generate go run ./bundle

// Files holds index.html and dist/app.js, dist/app.css.
//
//go:embed index.html dist/app.js dist/app.css
var Files embed.FS
