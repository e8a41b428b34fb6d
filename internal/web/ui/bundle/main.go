// Command bundle builds internal/web/ui/dist from src with esbuild's Go API
// (go generate ./internal/web/ui). The output is committed.
package main

import (
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/web/ui/bundle/esb"
)

func main() {
	if err := esb.Write("."); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}
