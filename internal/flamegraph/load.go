package flamegraph

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sonde-dev/sonde/internal/datafile"
)

// Load reads a sonde data file, or collapsed stacks when the file does not
// start with sonde's magic, and returns the tree with a subtitle saying
// what was recorded.
func Load(path string) (*Node, string, error) {
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
	root, err := ParseFolded(br)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a sonde data file, and not collapsed stacks: %w", path, err)
	}
	return root, "", nil
}
