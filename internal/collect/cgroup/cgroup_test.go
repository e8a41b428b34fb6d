package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hybrid = `25 30 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid - cgroup cgroup rw,xattr,name=systemd
28 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
29 25 0:27 / /sys/fs/cgroup/perf_event rw,nosuid - cgroup cgroup rw,perf_event
30 25 0:28 / /mnt/my\040cg rw - cgroup2 none rw
`

func TestParseMountinfo(t *testing.T) {
	hs, err := ParseMountinfo(strings.NewReader(hybrid))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hs {
		got = append(got, h.Mount+"="+map[bool]string{true: "v2", false: strings.Join(h.Controllers, "+")}[h.V2])
	}
	want := "/sys/fs/cgroup/unified=v2 /sys/fs/cgroup/systemd=name=systemd /sys/fs/cgroup/cpu,cpuacct=cpu+cpuacct /sys/fs/cgroup/perf_event=perf_event /mnt/my cg=v2"
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	order := ordered(hs)
	if !order[0].V2 || order[2].Controllers[0] != "perf_event" {
		t.Fatalf("lookup order %v", order)
	}
}

func TestParseProcCgroup(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0::/user.slice/session-1.scope\n", "/user.slice/session-1.scope"},
		{"9:name=systemd:/\n4:memory:/x\n0::/sys/a\n", "/sys/a"},
		{"9:name=systemd:/docker/abc\n4:memory:/docker/abc\n", "/docker/abc"},
		{"4:memory:/m\n", "/m"},
		{"12:cpu,cpuacct:/docker/abc\n11:memory:/docker/def\n", "/docker/abc"},
		{"11:memory:/docker/def\n12:cpu,cpuacct:/docker/abc\n", "/docker/abc"},
		{"garbage\n", ""},
		{"", ""},
	} {
		got, _ := ParseProcCgroup(strings.NewReader(tc.in))
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A controller's cgroup is in its v1 hierarchy on a hybrid host, else in
// the v2 one (why reads the cpu controller's throttling).
func TestControllerPathAndMount(t *testing.T) {
	p, v2 := ParseControllerPath(strings.NewReader("4:memory:/m\n2:cpuacct,cpu:/sonde/x\n0::/\n"), "cpu")
	if p != "/sonde/x" || v2 {
		t.Errorf("v1 path %q %v", p, v2)
	}
	p, v2 = ParseControllerPath(strings.NewReader("0::/user.slice/app\n"), "cpu")
	if p != "/user.slice/app" || !v2 {
		t.Errorf("v2 path %q %v", p, v2)
	}
	mi := "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n40 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	hs, err := ParseMountinfo(strings.NewReader(mi))
	if err != nil {
		t.Fatal(err)
	}
	if m := controllerMount(hs, "cpu", false); m != "/sys/fs/cgroup/cpu" {
		t.Errorf("v1 mount %q", m)
	}
	if m := controllerMount(hs, "cpu", true); m != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 mount %q", m)
	}
}

func TestContainerOf(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 4)
	uid := "0a1b2c3d-1111-2222-3333-444455556666"
	us := strings.ReplaceAll(uid, "-", "_")
	for _, tc := range []struct {
		path string
		want Container
	}{
		{"/docker/" + id, Container{ID: id}},
		{"/system.slice/docker-" + id + ".scope", Container{ID: id}},
		{"/kubepods/burstable/pod" + uid + "/" + id, Container{ID: id, PodUID: uid}},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + us + ".slice/cri-containerd-" + id + ".scope", Container{ID: id, PodUID: uid}},
		{"/kubepods.slice/kubepods-pod" + us + ".slice/crio-" + id + ".scope", Container{ID: id, PodUID: uid}},
		{"/machine.slice/libpod-" + id + ".scope/container", Container{ID: id}},
		{"/user.slice/user-1000.slice/session-2.scope", Container{}},
		{"/system.slice/docker-" + id[:60] + ".scope", Container{}},
	} {
		if got := ContainerOf(tc.path); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	v2, v1 := filepath.Join(root, "unified"), filepath.Join(root, "cpu")
	for _, d := range []string{v2 + "/app/web", v1 + "/batch"} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
	}
	hs := []Hierarchy{{Mount: v1, Controllers: []string{"cpu"}}, {Mount: v2, V2: true}}
	for _, tc := range []struct {
		name, dir string
		v2        bool
	}{
		{"app/web", v2 + "/app/web", true},
		{"/app/web/", v2 + "/app/web", true},
		{"batch", v1 + "/batch", false},
		{v1 + "/batch", v1 + "/batch", false},
	} {
		got, err := Resolve(tc.name, hs)
		if err != nil || got.Dir != tc.dir || got.H.V2 != tc.v2 || got.ID == 0 {
			t.Errorf("%s: %+v %v, want %s", tc.name, got, err, tc.dir)
		}
	}
	if _, err := Resolve("nope", hs); err == nil || !strings.Contains(err.Error(), "no such cgroup") {
		t.Errorf("nope: %v", err)
	}
	if _, err := Resolve("x", nil); err == nil {
		t.Error("no hierarchy: no error")
	}
	ids := V2Paths(v2)
	found := false
	for _, p := range ids {
		found = found || p == "/app/web"
	}
	if !found {
		t.Errorf("V2Paths %v lacks /app/web", ids)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(hybrid, "0::/a\n")
	f.Fuzz(func(t *testing.T, mi, pc string) {
		ParseMountinfo(strings.NewReader(mi))
		ParseProcCgroup(strings.NewReader(pc))
		ContainerOf(pc)
	})
}

func TestSubsysID(t *testing.T) {
	procCgroups := "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\ncpu\t1\t1\t1\ncpuacct\t2\t1\t1\nmemory\t4\t5\t1\n"
	for _, tc := range []struct {
		ctl  []string
		want int
		ok   bool
	}{
		{[]string{"cpu", "cpuacct"}, 1, true},
		{[]string{"memory"}, 3, true},
		{[]string{"name=systemd"}, 0, false},
	} {
		got, err := subsysID(strings.NewReader(procCgroups), Target{Name: "x", H: Hierarchy{Controllers: tc.ctl}})
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%v: %d %v, want %d", tc.ctl, got, err, tc.want)
		}
	}
	if id, err := SubsysID(Target{H: Hierarchy{V2: true}}); id != -1 || err != nil {
		t.Errorf("v2: %d %v", id, err)
	}
}
