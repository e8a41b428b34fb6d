package flamegraph

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/modeltest"
)

func TestFoldedFromProfile(t *testing.T) {
	var buf bytes.Buffer
	root := FromProfile(modeltest.Sample())
	if err := WriteFolded(&buf, root); err != nil {
		t.Fatal(err)
	}
	want := `work;__libc_start_call_main;main;spin_a 600
work;__libc_start_call_main;main;spin_b 200
work;__libc_start_call_main;main;work+0x5000 10
work;__libc_start_call_main;main;write;do_syscall_64_[k];ksys_write_[k] 20
`
	if buf.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", buf.String(), want)
	}
	again, err := ParseFolded(strings.NewReader(buf.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	WriteFolded(&buf2, again)
	if buf2.String() != want {
		t.Errorf("round trip:\n%s", buf2.String())
	}
	if again.Value != 830 {
		t.Errorf("total %g, want 830", again.Value)
	}
}

func TestParseFoldedErrors(t *testing.T) {
	for _, in := range []string{"a;b;c\n", "a;b x\n"} {
		if _, err := ParseFolded(strings.NewReader(in), nil); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestSVGIsSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, FromProfile(modeltest.Sample()), Options{Title: "t <&>"}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if strings.Contains(s, "http://") && strings.Count(s, "http://www.w3.org") != strings.Count(s, "http://") {
		t.Error("SVG refers to external resources")
	}
	if !strings.Contains(s, "t &lt;&amp;&gt;") {
		t.Error("title not escaped")
	}
	if strings.Count(s, "]]>") != 1 {
		t.Error("frame data can close the CDATA section")
	}
}
