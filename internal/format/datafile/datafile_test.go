package datafile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"reflect"
	"testing"

	"github.com/sonde-dev/sonde/internal/model/modeltest"
	"github.com/sonde-dev/sonde/internal/model/stackstat"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func TestRoundTrip(t *testing.T) {
	p := modeltest.Sample()
	p.Meta.Warnings = []string{"a warning"}
	p.Threads[1].Cgroup = "/system.slice/docker-0123.scope" // one thread with, one without
	p.Meta.UserStacks = &stackstat.Completeness{Total: 102, Complete: 90, NoUnwind: 4, FrameLimit: 1, BadRead: 2,
		Unsupported: 1, NotLoaded: 1, Lost: 1, Unwritten: 2, FPFallback: 7, NoUnwindFiles: map[string]uint64{"/opt/a.so": 3, "/opt/b.so": 1}}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	q, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip changed the profile:\n%+v\n%+v", p.Meta, q.Meta)
	}
	perSample := float64(buf.Len()) / float64(len(p.Samples))
	t.Logf("%d bytes, %.2f bytes/sample", buf.Len(), perSample)
}

func TestReadErrors(t *testing.T) {
	var good bytes.Buffer
	Write(&good, modeltest.Sample())
	b := good.Bytes()
	newer := append([]byte(nil), b...)
	newer[8] = Version + 1
	read := func(r io.Reader) error {
		_, err := Read(r)
		return err
	}
	testutil.Refuses(t, read, []testutil.Damaged{
		{Name: "empty", Data: nil, Want: "too short"},
		{Name: "bad_magic", Data: []byte("XXXXXXXXXXXXXXXXXXXXXXXX"), Want: "bad magic"},
		{Name: "perf_data", Data: []byte("PERFILE2xxxxxxxxxxxxxxxx"), Want: "perf.data"},
		{Name: "newer", Data: newer, Want: "newer"},
		{Name: "truncated_header", Data: b[:10], Want: "too short"},
		{Name: "truncated_body", Data: b[:len(b)-20], Want: "truncated"},
		{Name: "zero_version", Data: append([]byte("SONDEPRF\x00\x00\x00\x00"), b[12:]...), Want: "version 0"},
	})
}

// FuzzRead feeds damaged data files to the reader: it must return an error
// or a valid profile, never panic or allocate without bound.
func FuzzRead(f *testing.F) {
	var good bytes.Buffer
	Write(&good, modeltest.Sample())
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:40])
	f.Add([]byte(Magic + "\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadWith(bytes.NewReader(data), ReadOptions{Raw: true})
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("Read accepted an invalid profile: %v", verr)
			}
		}
	})
}

// TestWriteFuzzSeeds (with -update) writes seed inputs for FuzzRead:
// uncompressed-section variants a mutator can reach more easily than gzip.
func TestWriteFuzzSeeds(t *testing.T) {
	testutil.WriteFuzzSeeds(t, "FuzzRead", func() map[string][]byte {
		var good bytes.Buffer
		Write(&good, modeltest.Sample())
		var chunks bytes.Buffer
		grow(t, modeltest.Sample(), 300, NewWriter(&chunks), false)
		return map[string][]byte{
			"chunks":     chunks.Bytes(),
			"chunks_cut": chunks.Bytes()[:chunks.Len()-30],
			"good":       good.Bytes(),
			"truncated":  good.Bytes()[:good.Len()/2],
			"header":     []byte(Magic + "\x01\x00\x00\x00"),
			"newer":      []byte(Magic + "\x09\x00\x00\x00"),
		}
	})
}

// FuzzSections fuzzes the section decoder below the gzip layer, where a
// mutator reaches the varint tables directly.
func FuzzSections(f *testing.F) {
	var good bytes.Buffer
	Write(&good, modeltest.Sample())
	zr, err := gzip.NewReader(bytes.NewReader(good.Bytes()[12:]))
	if err != nil {
		f.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	f.Add(raw)
	f.Add(raw[:len(raw)/3])
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := readSections(bufio.NewReader(bytes.NewReader(data)), ReadOptions{Group: len(data)%2 == 0, Raw: true})
		if err == nil {
			if verr := p.Validate(); verr != nil {
				t.Fatalf("accepted an invalid profile: %v", verr)
			}
		}
	})
}
