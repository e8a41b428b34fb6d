// Package preload holds sonde's in-process function-graph recorder: C
// loaded with LD_PRELOAD into programs built with -finstrument-functions
// (csrc/recorder.c, csrc/ring.h), built for each architecture by build.sh and
// embedded here, so sonde writes it out at run time.
package preload

import "embed"

//go:generate sh build.sh

// Objects holds recorder_<GOARCH>.so for amd64, arm64 and arm.
//
//go:embed recorder_*.so
var Objects embed.FS
