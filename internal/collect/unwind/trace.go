package unwind

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// SONDE_UNWIND_TRACE=FILE appends the loader's decisions (each notice,
// each process's mappings as written, each table's file entry, each
// eviction, each walked stack as read) to FILE: for finding why a stack
// stopped short when it cannot be made to happen under a debugger. Off
// (one nil check) otherwise.
var trace struct {
	sync.Mutex
	f *os.File
}

func init() {
	if p := os.Getenv("SONDE_UNWIND_TRACE"); p != "" {
		trace.f, _ = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
}

func tracef(format string, a ...any) {
	if trace.f == nil {
		return
	}
	trace.Lock()
	defer trace.Unlock()
	fmt.Fprintf(trace.f, "%s %s\n", time.Now().Format("15:04:05.000000"), fmt.Sprintf(format, a...))
}
