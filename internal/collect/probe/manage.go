package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// ExecOf is the executable of a running process, as a path this process
// (and the kernel's uprobes) can open: through /proc/PID/root when the
// process is in another mount namespace, /proc/PID/exe itself when the file
// was deleted (it still opens the running binary), else the path it was
// started from.
func ExecOf(pid int) (string, error) {
	link := fmt.Sprintf("/proc/%d/exe", pid)
	exe, err := os.Readlink(link)
	if err != nil {
		return "", fmt.Errorf("no such process: %d", pid)
	}
	if strings.HasSuffix(exe, " (deleted)") {
		if _, err := os.Stat(link); err != nil {
			return "", fmt.Errorf("executable of process %d: %w", pid, err)
		}
		return link, nil
	}
	if viaRoot := fmt.Sprintf("/proc/%d/root%s", pid, exe); fileExists(viaRoot) {
		return viaRoot, nil
	}
	return exe, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// DelOwn removes every probe in the groups sonde and perf probe create
// (probe, probe_*, sonde_*) and returns how many it removed.
func DelOwn() (int, error) {
	ps, err := List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range ps {
		if strings.HasPrefix(p.Group, "probe_") || strings.HasPrefix(p.Group, "sonde_") || p.Group == "probe" {
			if err := Del(p.Name()); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// Listed is one probe as probe -l --json writes it (keys in docs/json.md).
type Listed struct {
	Name       string `json:"name"` // group:event, the name -e takes
	Binary     string `json:"binary,omitempty"`
	Function   string `json:"function"`
	Return     bool   `json:"return"`
	Definition string `json:"definition"` // the line written to tracefs
}

// WriteList writes probes as perf probe -l does, or as a JSON array.
func WriteList(w io.Writer, ps []Probe, asJSON bool) error {
	if asJSON {
		out := []Listed{}
		for _, p := range ps {
			out = append(out, Listed{Name: p.Name(), Binary: p.Binary, Function: p.Func, Return: p.Return, Definition: p.Definition()})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, p := range ps {
		_, def, _ := strings.Cut(p.Definition(), " ")
		if _, err := fmt.Fprintf(w, "  %-40s (%s)\n", p.Name(), def); err != nil {
			return err
		}
	}
	return nil
}
