package funclat

import (
	"slices"
	"strings"
	"testing"
)

func TestScanKallsyms(t *testing.T) {
	const text = "ffffffff81000000 T _stext\n" +
		"ffffffff81400000 t vfs_read\n" +
		"ffffffff81400100 T vfs_readv\n" +
		"ffffffff81400200 D vfs_data\n" +
		"ffffffffc0000000 t vfs_mod_fn\t[ext4]\n"
	found, _, err := scanKallsyms(strings.NewReader(text), "vfs_read")
	if err != nil || !found {
		t.Errorf("vfs_read: found %v, %v", found, err)
	}
	found, _, _ = scanKallsyms(strings.NewReader(text), "vfs_mod_fn")
	if !found {
		t.Error("a module's function not found")
	}
	found, near, _ := scanKallsyms(strings.NewReader(text), "vfs_reed")
	if found || !slices.Equal(near, []string{"vfs_read", "vfs_readv"}) {
		t.Errorf("vfs_reed: found %v, near %q", found, near)
	}
}
