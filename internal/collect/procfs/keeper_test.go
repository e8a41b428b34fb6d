package procfs

import (
	"errors"
	"os"
	"testing"
)

func TestMapsKeeper(t *testing.T) {
	alive := map[int][]Mapping{7: {{Start: 0x1000, End: 0x2000, Perms: "r-xp", Path: "/bin/app"}}}
	k := NewMapsKeeperWith(func(pid int) ([]Mapping, error) {
		if ms, ok := alive[pid]; ok {
			return ms, nil
		}
		return nil, errors.New("gone")
	})
	if !k.Keep(7) || k.Keep(8) || !k.Kept(7) || k.Kept(8) {
		t.Fatal("Keep/Kept")
	}
	alive[7] = []Mapping{} // a zombie: maps read empty
	if ms, err := k.Read(7); err != nil || len(ms) != 1 || ms[0].Path != "/bin/app" {
		t.Errorf("exited process: %v %v, want the kept mappings", ms, err)
	}
	if _, err := k.Read(8); err == nil {
		t.Errorf("never kept, gone: no error")
	}
}

func TestMapsKeeperForgetsGone(t *testing.T) {
	one := []Mapping{{Start: 0x1000, End: 0x2000, Perms: "r-xp", Path: "/bin/app"}}
	alive := true
	k := NewMapsKeeperWith(func(pid int) ([]Mapping, error) {
		if alive {
			return one, nil
		}
		return nil, errors.New("gone")
	})
	self, gone := os.Getpid(), 1<<30 // above any pid_max: no such process
	k.Keep(self)
	k.Keep(gone)
	alive = false
	k.ForgetGone()
	if !k.Kept(self) || k.Kept(gone) {
		t.Errorf("kept self %v, gone %v: want only the running process kept", k.Kept(self), k.Kept(gone))
	}
}
