package tracefs

import (
	"encoding/binary"
	"strings"
	"testing"
)

const blockIssue = `name: block_rq_issue
ID: 2104
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:dev_t dev;	offset:8;	size:4;	signed:0;
	field:sector_t sector;	offset:16;	size:8;	signed:0;
	field:unsigned int nr_sector;	offset:24;	size:4;	signed:0;
	field:unsigned int bytes;	offset:28;	size:4;	signed:0;
	field:unsigned short ioprio;	offset:32;	size:2;	signed:0;
	field:char rwbs[10];	offset:34;	size:10;	signed:0;
	field:char comm[16];	offset:44;	size:16;	signed:0;
	field:__data_loc char[] cmd;	offset:60;	size:4;	signed:0;
	field:int error;	offset:64;	size:4;	signed:1;

print fmt: "%d,%d %s", REC->dev
`

func TestParseFormatAndDecode(t *testing.T) {
	f, err := ParseFormat(strings.NewReader(blockIssue))
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != 2104 || f.Name != "block_rq_issue" || len(f.Fields) != 13 {
		t.Fatalf("got %+v", f)
	}
	raw := make([]byte, 80)
	binary.LittleEndian.PutUint32(raw[8:], 254<<20|3)
	binary.LittleEndian.PutUint64(raw[16:], 123456)
	binary.LittleEndian.PutUint32(raw[24:], 8)
	copy(raw[34:], "RA\x00")
	copy(raw[44:], "dd\x00")
	binary.LittleEndian.PutUint32(raw[60:], 4<<16|70) // "abc\0" at 70
	copy(raw[70:], "abc\x00")
	binary.LittleEndian.PutUint32(raw[64:], uint32(0xfffffffb)) // -5
	want := map[string]string{"dev": "254,3", "sector": "123456", "nr_sector": "8", "rwbs": "RA", "comm": "dd", "cmd": "abc", "error": "-5"}
	for name, w := range want {
		fd, ok := f.Field(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		if got := fd.String(raw); got != w {
			t.Errorf("%s = %q, want %q", name, got, w)
		}
	}
	fd, _ := f.Field("cmd")
	if fd.Kind != KindDataLoc {
		t.Errorf("cmd kind %d", fd.Kind)
	}
	if got := fd.String(raw[:20]); got != "?" {
		t.Errorf("short record gave %q", got)
	}
}

func TestGlob(t *testing.T) {
	all, _ := ParseAvailableEvents(strings.NewReader("block:block_rq_issue\nblock:block_rq_complete\nsched:sched_switch\n"))
	got, err := Glob("block:*", all)
	if err != nil || len(got) != 2 {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := Glob("nope:*", all); err == nil {
		t.Error("no match accepted")
	}
}

func TestMountPoints(t *testing.T) {
	in := `proc /proc proc rw 0 0
tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0
debugfs /sys/kernel/debug debugfs rw 0 0
tracefs /mnt/my\040trace tracefs rw 0 0
`
	got := MountPoints(strings.NewReader(in))
	want := []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing", "/mnt/my trace"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("MountPoints = %q, want %q", got, want)
	}
}
