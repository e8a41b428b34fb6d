package symbolize

import "testing"

// Files in a temporary directory are held (build and test tools delete
// them); others of sonde's own mount namespace are not.
func TestInTempDir(t *testing.T) {
	t.Setenv("TMPDIR", "/scratch/t/")
	for path, want := range map[string]bool{
		"/tmp/go-build123/b001/exe/main": true,
		"/var/tmp/x":                     true,
		"/dev/shm/jit.so":                true,
		"/scratch/t/a.out":               true,
		"/tmpfoo/bin":                    false,
		"/usr/bin/python3":               false,
		"/tmp":                           false,
	} {
		if got := inTempDir(path); got != want {
			t.Errorf("inTempDir(%q) = %v, want %v", path, got, want)
		}
	}
}
