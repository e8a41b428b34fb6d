package remote

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFileWarning: an agent whose token file every user can read
// starts, and says so once in its log with the fix; a private one is
// silent.
func TestTokenFileWarning(t *testing.T) {
	for mode, warned := range map[os.FileMode]bool{0o600: false, 0o640: false, 0o644: true, 0o604: true} {
		path := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(path, []byte("0123456789abcdef0123\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		var logged bytes.Buffer
		if _, err := NewAgent(AgentConfig{TokenFile: path, Exe: "/bin/true", Log: log.New(&logged, "", 0)}); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(logged.String(), "readable by every user") && strings.Contains(logged.String(), "chmod 600 "+path)
		if got != warned || strings.Count(logged.String(), "\n") > 1 {
			t.Errorf("token file mode %04o: log %q, want a warning: %v", mode, logged.String(), warned)
		}
	}
}
