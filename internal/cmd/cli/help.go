package cli

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// commandsMD is the help of every command, kept as one Markdown file so
// the prose reads (and is reviewed) as documentation, and the Go that
// defines a command holds only its flags and its run.
//
//go:embed commands.md
var commandsMD string

// Help is one command's text as cobra shows it.
type Help struct {
	Use, Short, Long, Example string
}

// catalogue is commands.md parsed once; the agent builds command trees
// from many goroutines at once, so what Doc records is under mu.
var catalogue = struct {
	once sync.Once
	help map[string]Help
	mu   sync.Mutex
	used map[string]bool
}{used: map[string]bool{}}

// Doc gives c the help that commands.md has under path ("record",
// "ftrace record") and returns c. A path missing there is a bug in the
// program, not in its input: the command-tree test finds it.
func Doc(path string, c *cobra.Command) *cobra.Command {
	catalogue.once.Do(func() {
		h, err := ParseHelp(strings.NewReader(commandsMD))
		if err != nil {
			panic(fmt.Sprintf("cli: commands.md: %v", err))
		}
		catalogue.help = h
	})
	h, ok := catalogue.help[path]
	if !ok {
		panic(fmt.Sprintf("cli: commands.md has no section for %q", path))
	}
	catalogue.mu.Lock()
	catalogue.used[path] = true
	catalogue.mu.Unlock()
	c.Use, c.Short, c.Long, c.Example = h.Use, h.Short, h.Long, h.Example
	return c
}

// UnusedHelp lists the sections of commands.md no command has taken (by
// Doc) so far: after building the whole tree, text for commands that no
// longer exist.
func UnusedHelp() []string {
	catalogue.mu.Lock()
	defer catalogue.mu.Unlock()
	var out []string
	for p := range catalogue.help {
		if !catalogue.used[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// pathWord is a word of a command's path in a heading; the usage's
// arguments start at the first word that is not one ("[flags]", "FILE",
// "udp://:PORT", "--start").
var pathWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ParseHelp reads a help catalogue, keyed by command path. Each command is
// a section: a "## PATH ARGS" heading (its usage line), then a paragraph
// of one line (the summary), the description (any paragraphs, optional),
// and the examples (optional) as one fenced code block, one command a line.
// Text before the first heading is the file's own introduction.
func ParseHelp(r io.Reader) (map[string]Help, error) {
	out := map[string]Help{}
	var (
		path  string
		h     Help
		state int // 0 before the first section, 1 summary, 2 description, 3 examples, 4 after them
		long  []string
		ex    []string
	)
	finish := func() error {
		if path == "" {
			return nil
		}
		if h.Short == "" {
			return fmt.Errorf("%q: no summary line", path)
		}
		if state == 3 {
			return fmt.Errorf("%q: the examples' code block is not closed", path)
		}
		h.Long = strings.Trim(strings.Join(long, "\n"), "\n")
		h.Example = strings.Join(ex, "\n")
		if _, dup := out[path]; dup {
			return fmt.Errorf("%q: two sections", path)
		}
		out[path] = h
		return nil
	}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") && state != 3 {
			if err := finish(); err != nil {
				return nil, err
			}
			words := strings.Fields(line[3:])
			i := 0
			for i < len(words) && pathWord.MatchString(words[i]) {
				i++
			}
			if i == 0 {
				return nil, fmt.Errorf("line %d: heading %q does not start with a command name", n, line)
			}
			path = strings.Join(words[:i], " ")
			h = Help{Use: strings.Join(words[i-1:], " ")}
			state, long, ex = 1, nil, nil
			continue
		}
		switch state {
		case 1:
			switch {
			case line == "" && h.Short == "":
			case line == "":
				state = 2
			case h.Short != "":
				return nil, fmt.Errorf("line %d: %q: the summary is one line", n, path)
			default:
				h.Short = line
			}
		case 2:
			if line == "```" {
				state = 3
			} else {
				long = append(long, line)
			}
		case 3:
			switch {
			case line == "```":
				state = 4
			case line == "":
				return nil, fmt.Errorf("line %d: %q: blank line among the examples", n, path)
			default:
				ex = append(ex, "  "+line)
			}
		case 4:
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("line %d: %q: text after the examples", n, path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading help: %w", err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}
