package remote

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestRenderRoundTrip(t *testing.T) {
	var b bytes.Buffer
	writeFrame(&b, frameStderr, []byte("sonde: recording\n"))
	writeFrame(&b, frameStdout, []byte("report\n"))
	writeFrame(&b, frameFile, []byte("output"))
	big := bytes.Repeat([]byte("x"), maxFrame)
	writeFrame(&b, frameData, big)
	writeFrame(&b, frameData, []byte("tail"))
	writeFrame(&b, frameExit, exitPayload(3, ""))
	dir := t.TempDir()
	out := filepath.Join(dir, "got.data")
	var so, se bytes.Buffer
	code, err := render(&b, map[string]string{"output": out}, &so, &se, "test")
	if err != nil || code != 3 {
		t.Fatalf("render = %d, %v", code, err)
	}
	if so.String() != "report\n" || se.String() != "sonde: recording\n" {
		t.Errorf("stdout %q, stderr %q", so.String(), se.String())
	}
	if got, _ := os.ReadFile(out); len(got) != maxFrame+4 || !bytes.HasSuffix(got, []byte("tail")) {
		t.Errorf("file of %d bytes", len(got))
	}
}

func TestRenderRefuses(t *testing.T) {
	for name, frames := range map[string][]struct {
		kind byte
		p    string
	}{
		"unasked file": {{frameFile, "flamegraph"}, {frameData, "<svg>"}, {frameExit, "\x00\x00\x00\x00"}},
		"data first":   {{frameData, "x"}},
		"cut":          {{frameStdout, "half"}},
	} {
		var b bytes.Buffer
		for _, f := range frames {
			writeFrame(&b, f.kind, []byte(f.p))
		}
		dir := t.TempDir()
		if _, err := render(&b, map[string]string{"output": filepath.Join(dir, "o")}, io.Discard, io.Discard, "test"); err == nil {
			t.Errorf("%s: no error", name)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s: left %v", name, ents)
		}
	}
}

// FuzzRender: whatever an agent sends, the client writes nothing but the
// files it asked for, and does not panic.
func FuzzRender(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, frameStdout, []byte("hi"))
	writeFrame(&b, frameFile, []byte("output"))
	writeFrame(&b, frameData, []byte("data"))
	writeFrame(&b, frameExit, exitPayload(0, ""))
	f.Add(b.Bytes())
	f.Add([]byte("x\x00\x00\x00\x04exit"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		render(bytes.NewReader(data), map[string]string{"output": filepath.Join(dir, "out")}, io.Discard, io.Discard, "fuzz")
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "out" {
				t.Fatalf("wrote %s", e.Name())
			}
		}
	})
}
