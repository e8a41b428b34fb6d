package procfs

import (
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c8a00000-55d0c8a01000 r--p 00000000 08:01 1234 /usr/bin/work
55d0c8a01000-55d0c8a02000 r-xp 00001000 08:01 1234 /usr/bin/work
7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 
7f1e2d028000-7f1e2d1bd000 r-xp 00028000 08:01 5678 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd1c3f0000-7ffd1c3f2000 r-xp 00000000 00:00 0                          [vdso]
7f00aa000000-7f00aa001000 r-xp 00000000 08:01 99 /tmp/my dir/lib with space.so (deleted)
`
	maps, err := ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 6 {
		t.Fatalf("got %d mappings", len(maps))
	}
	cases := []struct {
		i     int
		start uint64
		off   uint64
		exec  bool
		path  string
	}{
		{1, 0x55d0c8a01000, 0x1000, true, "/usr/bin/work"},
		{2, 0x7f1e2c000000, 0, false, ""},
		{3, 0x7f1e2d028000, 0x28000, true, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{4, 0x7ffd1c3f0000, 0, true, "[vdso]"},
		{5, 0x7f00aa000000, 0, true, "/tmp/my dir/lib with space.so (deleted)"},
	}
	for _, c := range cases {
		m := maps[c.i]
		if m.Start != c.start || m.Offset != c.off || m.Exec() != c.exec || m.Path != c.path {
			t.Errorf("mapping %d = %+v", c.i, m)
		}
	}
}

func TestParseMapsBad(t *testing.T) {
	if _, err := ParseMaps(strings.NewReader("zz-10 r-xp 0 0:0 0 /x\n")); err == nil {
		t.Error("bad address accepted")
	}
}

func TestParseTgid(t *testing.T) {
	got, err := ParseTgid(strings.NewReader("Name:\twork\nUmask:\t0022\nState:\tR\nTgid:\t4242\nNgid:\t0\nPid:\t4243\n"))
	if err != nil || got != 4242 {
		t.Errorf("got %d %v", got, err)
	}
}
