// Command bundle builds internal/service/web/ui/dist from src with esbuild's Go API
// (go generate ./internal/service/web/ui). The output is committed.
package main

import (
	"fmt"
	"os"

	"github.com/sonde-dev/sonde/internal/service/web/ui/bundle/esb"
)

func main() {
	if err := esb.Write("."); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}
