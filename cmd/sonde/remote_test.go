package main

// sonde agent and sonde --remote as two hosts: the agent in one network
// namespace, the client in another, joined by a veth pair.

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/spf13/pflag"

	"github.com/sonde-dev/sonde/internal/cmd/commands"
	"github.com/sonde-dev/sonde/internal/cmd/remote"
	"github.com/sonde-dev/sonde/internal/collect/procfs"
	"github.com/sonde-dev/sonde/internal/format/datafile"
	"github.com/sonde-dev/sonde/internal/testutil"
)

func sampleValue(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "string", "stringSlice", "stringArray":
		return "x"
	}
	return f.DefValue
}

func TestRemoteValidate(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // the rebuilt line, or the error's text
	}{
		{[]string{"record", "-ag", "-d", "3", "-o", "/home/me/run.data"}, "record --all-cpus=true --callchain=true --duration=3s --output=run.data"},
		{[]string{"profile", "-p", "42", "--flamegraph", "../x.svg", "-o", "p.data"}, "profile --flamegraph=x.svg --output=p.data --pid=42"},
		{[]string{"offcpu", "-o", "..", "-d", "1"}, "offcpu --duration=1s --output=output"},
		{[]string{"funclat", "-p", "7", "libc:getaddrinfo"}, "funclat --pid=7 libc:getaddrinfo"},
		{[]string{"cputime", "1", "5", "--comm", "a,b"}, "cputime --comm=a,b 1 5"},
		{[]string{"record", "-a", "--", "sh", "-c", "id"}, "the agent starts no programs"},
		{[]string{"profile", "--", "id"}, "the agent starts no programs"},
		{[]string{"wakeup", "id"}, "the agent starts no programs"},
		{[]string{"profile", "-F", "99", "5"}, "profile --freq=99 5"},
		{[]string{"offcpu", "500ms"}, "offcpu 500ms"},
		{[]string{"funclat", "/bin/sh:main"}, "paths are not taken over the wire"},
		{[]string{"latency", "-i", "x.data"}, "not offered remotely"},
		{[]string{"cputime", "--stream", "udp://h:9"}, "not offered remotely"},
		{[]string{"report", "-i", "x"}, "does not run through the agent"},
		{[]string{"probe", "--add", "x"}, "does not run through the agent"},
		{[]string{"record", "--remote", "h:1"}, "not offered remotely"},
	} {
		plan, err := remote.Validate(commands.Root("dev"), c.args)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = strings.Join(plan.Args, " ")
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("Validate(%q) = %q, want %q", c.args, got, c.want)
		}
		if err == nil { // what the agent runs parses back to itself
			again, err := remote.Validate(commands.Root("dev"), plan.Args)
			if err != nil || strings.Join(again.Args, " ") != got {
				t.Errorf("Validate(%q) again = %v, %v", plan.Args, again, err)
			}
		}
	}
}

// hosts is two network namespaces joined by a veth pair: the agent's at
// agentIP, the client's at the other end.
type hosts struct{ agentNS, clientNS, agentIP string }

func twoHosts(t *testing.T) hosts {
	t.Helper()
	testutil.RequireTool(t, "ip", "iproute2")
	id := strconv.Itoa(os.Getpid() % 100000)
	h := hosts{agentNS: "sonde-agent-" + id, clientNS: "sonde-client-" + id, agentIP: "10.203.0.1"}
	va, vc := "sva"+id, "svc"+id
	ip := func(args ...string) {
		t.Helper()
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, b)
		}
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", h.agentNS).Run() // takes its end of the veth pair with it
		exec.Command("ip", "netns", "del", h.clientNS).Run()
		exec.Command("ip", "link", "del", va).Run()
	})
	ip("netns", "add", h.agentNS)
	ip("netns", "add", h.clientNS)
	ip("link", "add", va, "type", "veth", "peer", "name", vc)
	ip("link", "set", va, "netns", h.agentNS)
	ip("link", "set", vc, "netns", h.clientNS)
	ip("-n", h.agentNS, "addr", "add", h.agentIP+"/24", "dev", va)
	ip("-n", h.clientNS, "addr", "add", "10.203.0.2/24", "dev", vc)
	for _, ns := range []string{h.agentNS, h.clientNS} {
		ip("-n", ns, "link", "set", "lo", "up")
	}
	ip("-n", h.agentNS, "link", "set", va, "up")
	ip("-n", h.clientNS, "link", "set", vc, "up")
	return h
}

// agentLog collects the agent's log lines.
type agentLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *agentLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// startAgent runs sonde agent in the agent's namespace until the test ends.
func (h hosts) startAgent(t *testing.T, args ...string) (*exec.Cmd, *agentLog) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.agentNS, testutil.Sonde(t), "agent", "--listen", h.agentIP + ":7878"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &agentLog{}
	serving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			log.mu.Lock()
			log.lines = append(log.lines, sc.Text())
			log.mu.Unlock()
			if strings.Contains(sc.Text(), "serving") {
				serving <- true
			}
		}
		close(serving)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("the agent's log:\n%s", log.String())
		}
	})
	if !<-serving {
		cmd.Wait()
		t.Fatalf("agent did not start:\n%s", log)
	}
	return cmd, log
}

// client runs sonde in the client's namespace.
func (h hosts) client(t *testing.T, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.clientNS, testutil.Sonde(t), "--remote", h.agentIP + ":7878"}, args...)...)
	cmd.Dir = dir
	return cmd
}

func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

func writeToken(t *testing.T, dir, name, tok string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRemoteAgent(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	h := twoHosts(t)
	tok := writeToken(t, dir, "token", "s3cret-token-for-the-test")
	_, log := h.startAgent(t, "--token-file", tok, "--max-runs", "4")
	w := startWork(t, dir, "100000")
	pid := strconv.Itoa(w.Process.Pid)

	t.Run("record_like_local", func(t *testing.T) {
		// Both at once, on the same workload: the remote run must see what a
		// local one sees.
		local := exec.Command(testutil.Sonde(t), "record", "-q", "-a", "-g", "--duration", "3s", "-o", "local.data")
		local.Dir = dir
		if err := local.Start(); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, h.client(t, dir, "--token-file", tok, "record", "-a", "-g", "--duration", "3s", "-o", filepath.Join(dir, "remote.data")))
		if err := local.Wait(); err != nil || code != 0 {
			t.Fatalf("local record: %v; remote record: exit %d\n%s", err, code, stderr)
		}
		if !strings.Contains(stderr, "written to remote.data") {
			t.Errorf("remote record's summary did not stream back: %q", stderr)
		}
		for _, f := range []string{"local.data", "remote.data"} {
			rep := reportJSON(t, dir, "-i", f, "--no-children", "--pid", pid)
			checkSplit(t, rep, "spin_a", "spin_b")
		}
	})
	t.Run("record_to_stdout", func(t *testing.T) {
		// -o - brings the data file back on standard output (it printed
		// "written to -" and sent nothing), the summary on stderr.
		stdout, stderr, code := run(t, h.client(t, dir, "--token-file", tok, "record", "-a", "-g", "--duration", "1s", "-o", "-"))
		if code != 0 || !strings.HasPrefix(stdout, datafile.Magic) || !strings.Contains(stderr, "written to standard output") {
			t.Fatalf("remote record -o -: exit %d, %d bytes starting %q\n%s", code, len(stdout), stdout[:min(len(stdout), 8)], stderr)
		}
		data := filepath.Join(dir, "stdout.data")
		if err := os.WriteFile(data, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		checkSplit(t, reportJSON(t, dir, "-i", data, "--no-children", "--pid", pid), "spin_a", "spin_b")
		if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
			t.Errorf("a file named - was written")
		}
	})
	t.Run("offcpu_cputime", func(t *testing.T) {
		stdout, stderr, code := run(t, h.client(t, dir, "--token-file", tok, "offcpu", "-d", "1", "--json", "-o", "off.data"))
		var o offcpuJSON
		if err := json.Unmarshal([]byte(stdout), &o); code != 0 || err != nil || o.Total <= 0 {
			t.Errorf("remote offcpu: exit %d, %v, total %v\n%s", code, err, o.Total, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "off.data")); err != nil {
			t.Errorf("remote offcpu's data file: %v", err)
		}
		before := schedstatNS(t, w.Process.Pid)
		stdout, stderr, code = run(t, h.client(t, dir, "--token-file", tok, "cputime", "1", "1", "--json", "--pid", pid))
		spent := schedstatNS(t, w.Process.Pid) - before
		var rep struct {
			Tasks []struct {
				Pid uint32 `json:"pid"`
				NS  uint64 `json:"cpu_ns"`
			} `json:"tasks"`
		}
		// Its one-second interval lies inside the client's run: at most what
		// schedstat counted over the run, and a busy task's good part of it.
		if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || len(rep.Tasks) == 0 ||
			rep.Tasks[0].NS > spent || rep.Tasks[0].NS < 100e6 {
			t.Errorf("remote cputime of the busy workload (schedstat %d ns over the run): exit %d, %v, %+v\n%s%s", spent, code, err, rep, stdout, stderr)
		}
	})
	t.Run("wrong_token", func(t *testing.T) {
		bad := writeToken(t, dir, "bad", "not-the-token-at-all")
		_, stderr, code := run(t, h.client(t, dir, "--token-file", bad, "cputime", "1", "1"))
		if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "wrong or missing token") {
			t.Errorf("wrong token: exit %d, stderr %q; want one line and a failure", code, stderr)
		}
		if strings.Contains(log.String(), "not-the-token") || strings.Contains(log.String(), "s3cret") {
			t.Errorf("the agent logged a token:\n%s", log)
		}
	})
	t.Run("client_killed", func(t *testing.T) {
		before := programIDs()
		c := h.client(t, dir, "--token-file", tok, "funclat", "-p", pid, "work:spin_b", "-d", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the run to start", func() bool { return strings.Contains(log.String(), "running funclat") })
		waitFor(t, "the run's BPF programs", func() bool { return len(newPrograms(before)) > 0 })
		ours := newPrograms(before)
		c.Process.Kill() // ip netns exec execs sonde: this is the client
		c.Wait()
		waitFor(t, "the agent to end the run", func() bool { return strings.Contains(log.String(), "funclat ended") })
		if b, _ := os.ReadFile("/sys/kernel/tracing/uprobe_events"); strings.Contains(string(b), "sonde") {
			t.Errorf("uprobes left after the client was killed:\n%s", b)
		}
		// The kernel frees programs shortly after their last reference goes.
		left := func() (n int) {
			now := programIDs()
			for _, id := range ours {
				if now[id] {
					n++
				}
			}
			return n
		}
		for end := time.Now().Add(5 * time.Second); left() > 0 && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		if n := left(); n > 0 {
			t.Errorf("%d of the run's %d BPF programs left after the client was killed", n, len(ours))
		}
	})
	t.Run("bounded", func(t *testing.T) {
		const n = 50
		var wg sync.WaitGroup
		codes, errs := make([]int, n), make([]string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i], codes[i] = run(t, h.client(t, dir, "--token-file", tok, "cputime", "1", "2"))
			}()
		}
		wg.Wait()
		ok, busy := 0, 0
		for i := range n {
			switch {
			case codes[i] == 0:
				ok++
			case strings.Contains(errs[i], "agent busy: 4 runs in progress"):
				busy++
			default:
				t.Errorf("request %d: exit %d: %s", i, codes[i], errs[i])
			}
		}
		if ok < 1 || ok > 4*3 || ok+busy != n { // 4 at once; 2 s each while the 50 arrive
			t.Errorf("%d ran, %d refused as busy of %d", ok, busy, n)
		}
		t.Logf("%d ran, %d refused as busy", ok, busy)
	})
}

// programIDs lists the BPF programs loaded now.
func programIDs() map[ebpf.ProgramID]bool {
	ids := map[ebpf.ProgramID]bool{}
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return ids
		}
		ids[next], id = true, next
	}
}

// newPrograms is what programIDs holds that before did not.
func newPrograms(before map[ebpf.ProgramID]bool) []ebpf.ProgramID {
	var out []ebpf.ProgramID
	for id := range programIDs() {
		if !before[id] {
			out = append(out, id)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestRemoteTLS: an agent that wants client certificates from its CA
// serves a client holding one and refuses one from another CA.
func TestRemoteTLS(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := t.TempDir()
	h := twoHosts(t)
	ca, caKey := newCA(t, dir, "ca")
	rogue, rogueKey := newCA(t, dir, "rogue")
	issue(t, dir, "agent", ca, caKey, net.ParseIP(h.agentIP))
	issue(t, dir, "client", ca, caKey, nil)
	issue(t, dir, "intruder", rogue, rogueKey, nil)
	p := func(n string) string { return filepath.Join(dir, n) }
	h.startAgent(t, "--tls-cert", p("agent.pem"), "--tls-key", p("agent.key"), "--client-ca", p("ca.pem"))

	stdout, stderr, code := run(t, h.client(t, dir, "--tls-ca", p("ca.pem"), "--tls-cert", p("client.pem"), "--tls-key", p("client.key"), "list"))
	if code != 0 || !strings.Contains(stdout, "cpu-clock") {
		t.Errorf("client with the CA's certificate: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = run(t, h.client(t, dir, "--tls-ca", p("ca.pem"), "--tls-cert", p("intruder.pem"), "--tls-key", p("intruder.key"), "list"))
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "reaching the agent") {
		t.Errorf("client with another CA's certificate: exit %d, stderr %q; want one line and a failure", code, stderr)
	}
	_, stderr, code = run(t, h.client(t, dir, "--tls-ca", p("rogue.pem"), "--tls-cert", p("client.pem"), "--tls-key", p("client.key"), "list"))
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "certificate") {
		t.Errorf("agent not signed by the client's CA: exit %d, stderr %q; want one line and a failure", code, stderr)
	}
}

func newCA(t *testing.T, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func issue(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, ip net.IP) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	kb, _ := x509.MarshalECPrivateKey(key)
	writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kb)
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// schedstatNS is a process's main thread's on-CPU time so far.
func schedstatNS(t *testing.T, pid int) uint64 {
	t.Helper()
	d, err := procfs.OnCPU(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(d)
}
