package syscalls

import "testing"

func TestNames(t *testing.T) {
	cases := []struct {
		arch string
		nr   int
		name string
	}{
		{"amd64", 0, "read"}, {"amd64", 1, "write"}, {"amd64", 231, "exit_group"},
		{"arm64", 63, "read"}, {"arm64", 64, "write"}, {"arm64", 94, "exit_group"}, {"arm64", 222, "mmap"},
		{"amd64", 435, "clone3"}, {"arm64", 435, "clone3"}, {"arm64", 403, "clock_gettime64"}, {"amd64", 403, "syscall_403"},
		{"amd64", 100000, "syscall_100000"},
	}
	for _, c := range cases {
		if got := Name(c.arch, c.nr); got != c.name {
			t.Errorf("%s %d = %q, want %q", c.arch, c.nr, got, c.name)
		}
	}
	if Number("amd64", "write") != 1 || Number("arm64", "write") != 64 || Number("arm64", "openat2") != 437 {
		t.Error("Number")
	}
}
