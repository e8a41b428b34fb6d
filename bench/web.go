package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

var onlyWeb = flag.Bool("web", false, "run only the web view's scale case (needs no root)")

// webScale runs internal/web's TestWebScale: sonde serve on a 1 M-sample
// recording in headless Chromium, first paint ≤ 1 s, zoom ≤ 100 ms,
// server peak RSS ≤ 2× the model (issue 16's targets). It is a test so the
// browser driver stays out of the bench binary.
func webScale() bool {
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "test", "-count=1", "-v", "-run", "^TestWebScale$", "./internal/web")
	cmd.Dir = filepath.Dir(filepath.Dir(self))
	cmd.Env = append(os.Environ(), "SONDE_WEB_SCALE=1")
	out, err := cmd.CombinedOutput()
	fmt.Printf("\n6. Web view of a 1 M-sample recording (sonde serve in headless Chromium)\n")
	for _, l := range strings.Split(string(out), "\n") {
		if _, msg, ok := strings.Cut(l, "scale_test.go:"); ok {
			_, msg, _ = strings.Cut(msg, ": ")
			fmt.Println("  ", msg)
		}
	}
	if err != nil {
		fmt.Printf("   FAILED: %v\n", err)
		return false
	}
	return true
}
