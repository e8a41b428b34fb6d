package cli

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestParseHelp(t *testing.T) {
	const fence = "```"
	for _, c := range []struct {
		name, in string
		want     map[string]Help
		err      string
	}{
		{name: "full section",
			in: "# intro\n\ntext\n\n## record [flags] [--] [COMMAND]\n\nsample stacks\n\nSample a command,\nor the system.\n\n" +
				fence + "\nsonde record ./a\nsonde record -ag\n" + fence + "\n",
			want: map[string]Help{"record": {Use: "record [flags] [--] [COMMAND]", Short: "sample stacks",
				Long: "Sample a command,\nor the system.", Example: "  sonde record ./a\n  sonde record -ag"}}},
		{name: "subcommand, summary only",
			in:   "## ftrace graph [FUNC]\n\nthe call graph\n## ftrace\n\ntracing\n",
			want: map[string]Help{"ftrace graph": {Use: "graph [FUNC]", Short: "the call graph"}, "ftrace": {Use: "ftrace", Short: "tracing"}}},
		{name: "arguments that look like words end the path",
			in:   "## listen udp://:PORT | tcp://:PORT\n\nreceive\n\n" + fence + "\nsonde listen udp://:9\n" + fence + "\n",
			want: map[string]Help{"listen": {Use: "listen udp://:PORT | tcp://:PORT", Short: "receive", Example: "  sonde listen udp://:9"}}},
		{name: "paragraphs kept", in: "## a\n\ns\n\none\n\ntwo\n\n",
			want: map[string]Help{"a": {Use: "a", Short: "s", Long: "one\n\ntwo"}}},
		{name: "no summary", in: "## a\n\n", err: `"a": no summary line`},
		{name: "two-line summary", in: "## a\n\none\ntwo\n", err: "the summary is one line"},
		{name: "duplicate", in: "## a\n\ns\n## a\n\nt\n", err: `"a": two sections`},
		{name: "open code block", in: "## a\n\ns\n\n" + fence + "\nsonde a\n", err: "not closed"},
		{name: "text after examples", in: "## a\n\ns\n\n" + fence + "\nsonde a\n" + fence + "\nmore\n", err: "text after the examples"},
		{name: "blank example line", in: "## a\n\ns\n\n" + fence + "\nsonde a\n\nsonde b\n" + fence + "\n", err: "blank line among the examples"},
		{name: "heading without a name", in: "## [flags]\n\ns\n", err: "does not start with a command name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseHelp(strings.NewReader(c.in))
			if testutil.WantErr(t, err, c.err) {
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %#v\nwant %#v", got, c.want)
			}
		})
	}
}

// TestEmbeddedHelp parses the catalogue the binary carries: a section per
// command with a summary, examples that run sonde.
func TestEmbeddedHelp(t *testing.T) {
	h, err := ParseHelp(strings.NewReader(commandsMD))
	if err != nil {
		t.Fatal(err)
	}
	if len(h) < 30 {
		t.Errorf("only %d sections in commands.md", len(h))
	}
	for path, s := range h {
		for _, ex := range strings.Split(s.Example, "\n") {
			if ex != "" && !strings.Contains(ex, "sonde "+strings.Fields(path)[0]) {
				t.Errorf("%s: example %q does not run sonde %s", path, ex, path)
			}
		}
	}
}

func FuzzParseHelp(f *testing.F) {
	f.Add(commandsMD)
	f.Add("## a b [c]\n\ns\n\nl\n\n```\nsonde a\n```\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := ParseHelp(strings.NewReader(in))
		if err != nil {
			return
		}
		for path, s := range h {
			if path == "" || s.Short == "" || !strings.HasPrefix(s.Use, strings.Fields(path)[len(strings.Fields(path))-1]) {
				t.Fatalf("section %q parsed as %#v", path, s)
			}
		}
	})
}

// TestDocConcurrent builds help from many goroutines, as the agent does
// (a command tree per request); run with -race it finds unguarded state.
func TestDocConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if c := Doc("record", &cobra.Command{}); c.Short == "" {
					t.Error("no summary for record")
				}
			}
		}()
	}
	wg.Wait()
}
