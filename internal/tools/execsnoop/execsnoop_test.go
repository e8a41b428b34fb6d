package execsnoop_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-dev/sonde/internal/testutil"
	"github.com/sonde-dev/sonde/internal/tools/execsnoop"
)

// TestExecsnoopAgainstLibbpfTools: every exec the test makes is seen, with
// its arguments; a failed one with ENOENT; a long argument list is kept
// to 20 and marked cut. libbpf-tools' execsnoop watches the same execs.
func TestExecsnoopAgainstLibbpfTools(t *testing.T) {
	testutil.RequirePrivileged(t)
	peerBin := testutil.RequireTool(t, "/usr/sbin/execsnoop", "libbpf-tools")
	nonce := "sonde-es-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	sonde := exec.Command(testutil.Sonde(t), "execsnoop", "-x", "--json", "-d", "60")
	sout, _ := sonde.StdoutPipe()
	var serr strings.Builder
	sonde.Stderr = &serr
	// Line-buffered (stdbuf), so its lines come as it prints them.
	peer := exec.Command(testutil.RequireTool(t, "stdbuf", "coreutils"), "-oL", peerBin, "-x")
	pout, _ := peer.StdoutPipe()
	for _, c := range []*exec.Cmd{sonde, peer} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	sLines, pLines := collect(sout, nonce), collect(pout, nonce)
	testutil.WaitBPFLinks(t, sonde.Process.Pid, 4, 30*time.Second)
	testutil.WaitBPFLinks(t, peer.Process.Pid, 2, 30*time.Second)

	const n = 20
	for i := range n {
		if out, err := exec.Command("/bin/echo", nonce, strconv.Itoa(i), "two words").CombinedOutput(); err != nil {
			t.Fatalf("echo: %v %s", err, out)
		}
	}
	exec.Command("sh", "-c", "/nonexistent/"+nonce).Run() // the shell's execve fails: ENOENT
	long := []string{nonce, "long"}
	for i := range 30 {
		long = append(long, strconv.Itoa(i))
	}
	exec.Command("/bin/true", long...).Run()

	// Each tool is done once it printed the last exec (the long one); they
	// stop on SIGINT.
	for name, l := range map[string]*lines{"sonde": sLines, "libbpf-tools": pLines} {
		if !l.waitFor(nonce+`","long"`, nonce+" long") {
			t.Fatalf("%s never printed the test's last exec: %q\nsonde's stderr: %s", name, l.all(), serr.String())
		}
	}
	for _, c := range []*exec.Cmd{sonde, peer} {
		c.Process.Signal(os.Interrupt)
	}
	<-sLines.done // all read before Wait closes the pipes
	<-pLines.done
	sonde.Wait()
	peer.Wait()
	got := execsOf(t, sLines.all())
	peerLines := pLines.all()

	var echoes, failed, cut int
	for _, x := range got {
		switch {
		case x.Comm == "echo":
			echoes++
			if len(x.Argv) != 4 || x.Argv[0] != "/bin/echo" || x.Argv[3] != "two words" || x.Ret != 0 {
				t.Errorf("echo exec: %+v", x)
			}
		case x.Ret != 0:
			failed++
			if x.Errno != "ENOENT" || x.Ret != -2 || x.Argv[0] != "/nonexistent/"+nonce {
				t.Errorf("failed exec: %+v, want ENOENT", x)
			}
		case x.Comm == "true":
			cut++
			if len(x.Argv) != 20 || !x.Cut {
				t.Errorf("long exec kept %d arguments (cut %v), want 20 and cut", len(x.Argv), x.Cut)
			}
		}
	}
	if echoes != n || failed != 1 || cut != 1 {
		t.Errorf("sonde saw %d of %d echoes, %d of 1 failed exec, %d of 1 long one:\n%+v\nstderr: %s", echoes, n, failed, cut, got, serr.String())
	}
	// libbpf-tools prints one line per exec (failed ones too with -x).
	if len(peerLines) != n+3 { // the echoes, sh -c, its failed exec, the long one
		t.Errorf("libbpf-tools' execsnoop saw %d execs of the test, want %d:\n%s", len(peerLines), n+3, strings.Join(peerLines, "\n"))
	}
	if len(got) != n+3 {
		t.Errorf("sonde saw %d execs of the test, want %d", len(got), n+3)
	}
	t.Logf("sonde: %d execs of the test; libbpf-tools: %d", len(got), len(peerLines))
	if !strings.Contains(serr.String(), "0 lost") {
		t.Errorf("sonde's footer: %s", serr.String())
	}
}

func execsOf(t *testing.T, ls []string) []execsnoop.Exec {
	t.Helper()
	var out []execsnoop.Exec
	for _, line := range ls {
		var x execsnoop.Exec
		if err := json.Unmarshal([]byte(line), &x); err != nil {
			t.Fatalf("a line that is not an exec: %q: %v", line, err)
		}
		out = append(out, x)
	}
	return out
}
