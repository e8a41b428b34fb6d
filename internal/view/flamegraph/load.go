package flamegraph

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/format/datafile"
)

// Load reads a sonde data file, or collapsed stacks when the file does not
// start with sonde's magic, and returns the tree with a subtitle saying
// what was recorded. warn hears about folded lines skipped (a cut file).
func Load(path string, warn func(string)) (*Node, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("opening input: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(len(datafile.Magic))
	if bytes.Equal(head, []byte(datafile.Magic)) {
		p, err := datafile.ReadFileWith(path, datafile.ReadOptions{Group: true})
		if err != nil {
			return nil, "", err
		}
		sub := fmt.Sprintf("%s, %d samples (%d lost), %s", p.Meta.Event, p.SampleCount(), p.Meta.Lost, time.Duration(p.Meta.DurationNS).Round(time.Millisecond))
		if len(p.Meta.Command) > 0 {
			sub += ": " + strings.Join(p.Meta.Command, " ")
		}
		return FromProfile(p), sub, nil
	}
	root, err := ParseFolded(br, warn)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a sonde data file, and not collapsed stacks: %w", path, err)
	}
	return root, "", nil
}

// FormatOf picks the output format: the one asked for, else from the
// output file's extension (.svg, .folded/.txt/.collapsed), else html.
func FormatOf(format, output string) (string, error) {
	if format == "" {
		switch strings.ToLower(filepath.Ext(output)) {
		case ".svg":
			format = "svg"
		case ".folded", ".txt", ".collapsed":
			format = "folded"
		default:
			format = "html"
		}
	}
	if format != "svg" && format != "html" && format != "folded" {
		return "", fmt.Errorf("%q: want svg, html or folded", format)
	}
	return format, nil
}

// Write writes the tree as folded stacks, SVG or HTML.
func Write(w io.Writer, root *Node, format string, o Options) error {
	switch format {
	case "folded":
		return WriteFolded(w, root)
	case "svg":
		return WriteSVG(w, root, o)
	}
	return WriteHTML(w, root, o)
}
