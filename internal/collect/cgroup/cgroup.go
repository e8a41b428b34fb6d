// Package cgroup finds control groups: the hierarchies mounted here (v2,
// v1 controllers, hybrid hosts), a cgroup named on the command line (perf's
// -G spelling), the cgroup of a process, the path of a v2 cgroup id (what
// bpf_get_current_cgroup_id and PERF_SAMPLE_CGROUP give), and the
// container and Kubernetes pod a cgroup path belongs to.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Hierarchy is one mounted cgroup hierarchy.
type Hierarchy struct {
	Mount       string   // where it is mounted
	V2          bool     // the unified hierarchy
	Controllers []string // v1: its controllers (cpu, memory, name=systemd…)
}

// Mounts lists the hierarchies mounted in sonde's mount namespace.
func Mounts() ([]Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	return ParseMountinfo(f)
}

// ParseMountinfo reads the cgroup hierarchies of a /proc/PID/mountinfo.
func ParseMountinfo(r io.Reader) ([]Hierarchy, error) {
	var out []Hierarchy
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 25 0:31 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		mount := unescape(f[4])
		switch g[0] {
		case "cgroup2":
			out = append(out, Hierarchy{Mount: mount, V2: true})
		case "cgroup":
			var ctl []string
			for _, o := range strings.Split(g[2], ",") {
				switch {
				case o == "rw" || o == "ro" || strings.HasPrefix(o, "release_agent=") || o == "noprefix" || o == "clone_children" || o == "xattr":
				default:
					ctl = append(ctl, o)
				}
			}
			out = append(out, Hierarchy{Mount: mount, Controllers: ctl})
		}
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%3o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Target is a cgroup named on the command line.
type Target struct {
	Name string    // as given
	Path string    // inside its hierarchy, "/a/b"
	Dir  string    // the directory
	H    Hierarchy // the hierarchy it is in
	ID   uint64    // the directory's inode: a v2 cgroup's id
}

// ErrNoCgroup says a name matches no cgroup directory.
var ErrNoCgroup = errors.New("no such cgroup")

// Resolve finds the cgroup a user names as perf's -G does: a path inside a
// hierarchy ("/system.slice/x.service", "x.service"), looked up in the v2
// hierarchy first, then in each v1 hierarchy (perf_event's first), or a
// directory under a cgroup mount (/sys/fs/cgroup/cpu/x).
func Resolve(name string, hs []Hierarchy) (Target, error) {
	if name == "" {
		return Target{}, fmt.Errorf("%w: empty name", ErrNoCgroup)
	}
	if len(hs) == 0 {
		return Target{}, errors.New("no cgroup hierarchy is mounted (mount -t cgroup2 none /sys/fs/cgroup)")
	}
	for _, h := range hs {
		if rel, ok := under(name, h.Mount); ok {
			return target(name, rel, h)
		}
	}
	rel := "/" + strings.Trim(name, "/")
	for _, h := range ordered(hs) {
		if t, err := target(name, rel, h); err == nil {
			return t, nil
		}
	}
	where := "any cgroup hierarchy"
	for _, h := range hs {
		if h.V2 {
			where = h.Mount
			if len(hs) > 1 {
				where += fmt.Sprintf(" or the %d v1 hierarchies", len(hs)-1)
			}
		}
	}
	return Target{}, fmt.Errorf("%w %q in %s", ErrNoCgroup, name, where)
}

func under(p, mount string) (string, bool) {
	p = filepath.Clean(p)
	if p == mount {
		return "/", true
	}
	if strings.HasPrefix(p, mount+"/") {
		return p[len(mount):], true
	}
	return "", false
}

// ordered puts v2 first, then perf_event's v1 hierarchy, then the others.
func ordered(hs []Hierarchy) []Hierarchy {
	var out, rest []Hierarchy
	for _, h := range hs {
		if h.V2 {
			out = append(out, h)
		}
	}
	for _, h := range hs {
		switch {
		case h.V2:
		case slices.Contains(h.Controllers, "perf_event"):
			out = append(out, h)
		default:
			rest = append(rest, h)
		}
	}
	return append(out, rest...)
}

func target(name, rel string, h Hierarchy) (Target, error) {
	dir := filepath.Join(h.Mount, rel)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return Target{}, fmt.Errorf("%w %q in %s", ErrNoCgroup, name, h.Mount)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		return Target{}, fmt.Errorf("%w: %s is not a cgroup directory", ErrNoCgroup, dir)
	}
	t := Target{Name: name, Path: filepath.Clean("/" + rel), Dir: dir, H: h}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		t.ID = sys.Ino
	}
	return t, nil
}

// PathOf returns the cgroup path of pid: its v2 cgroup, else (a v1-only
// host) its name=systemd one, else its cpu controller's, else the first
// listed ("" when it has none).
func PathOf(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	return ParseProcCgroup(f)
}

// ParseProcCgroup reads a /proc/PID/cgroup (see PathOf).
func ParseProcCgroup(r io.Reader) (string, error) {
	var v2, systemd, cpu, first string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// "0::/user.slice", "9:name=systemd:/x", "4:memory:/y"
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case parts[1] == "name=systemd":
			systemd = parts[2]
		case slices.Contains(strings.Split(parts[1], ","), "cpu") && cpu == "":
			cpu = parts[2]
		}
		if first == "" {
			first = parts[2]
		}
	}
	for _, p := range []string{v2, systemd, cpu, first} {
		if p != "" {
			return p, sc.Err()
		}
	}
	return "", sc.Err()
}

// ControllerDir is the directory of pid's cgroup for a controller (cpu,
// memory…): in the v1 hierarchy that has the controller, else in the v2
// one ("" when it is not found).
func ControllerDir(pid int, controller string) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	path, v2 := ParseControllerPath(f, controller)
	f.Close()
	if path == "" {
		return ""
	}
	hs, err := Mounts()
	if err != nil {
		return ""
	}
	if m := controllerMount(hs, controller, v2); m != "" {
		return filepath.Join(m, path)
	}
	return ""
}

// controllerMount is where the v1 hierarchy with controller, or with v2 the
// unified one, is mounted ("" when none is).
func controllerMount(hs []Hierarchy, controller string, v2 bool) string {
	for _, h := range hs {
		if (v2 && h.V2) || (!v2 && !h.V2 && slices.Contains(h.Controllers, controller)) {
			return h.Mount
		}
	}
	return ""
}

// ParseControllerPath finds a controller's path in a /proc/PID/cgroup: the
// v1 line that names it, else the v2 line ("0::/path"), and which it is.
func ParseControllerPath(r io.Reader, controller string) (path string, v2 bool) {
	sc := bufio.NewScanner(r)
	var unified string
	found := false
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified, found = parts[2], true
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), controller) {
			return parts[2], false
		}
	}
	return unified, found
}

// V2Paths maps the ids of the v2 cgroups under mount (their directories'
// inodes, what the kernel reports as a cgroup id) to their paths.
func V2Paths(mount string) map[uint64]string {
	out := map[uint64]string{}
	filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			rel, _ := under(p, mount)
			out[sys.Ino] = rel
		}
		return nil
	})
	return out
}

var (
	containerRe = regexp.MustCompile(`(?:^|[/-])(?:docker|cri-containerd|crio|libpod|containerd)?-?([0-9a-f]{64})(?:\.scope)?$`)
	podRe       = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
)

// Container is what a cgroup path says of the container holding it.
type Container struct {
	ID     string // the 64-hex container id (docker, containerd, cri-o, podman)
	PodUID string // the Kubernetes pod's uid
}

// ContainerOf reads the container id and pod uid from a cgroup path, as
// the runtimes name them: /docker/ID, /system.slice/docker-ID.scope,
// /kubepods/burstable/podUID/ID, kubepods-…-podUID.slice/cri-containerd-ID.scope,
// crio-ID.scope, /machine.slice/libpod-ID.scope.
func ContainerOf(path string) Container {
	var c Container
	for _, el := range strings.Split(path, "/") {
		if m := containerRe.FindStringSubmatch(el); m != nil {
			c.ID = m[1]
		}
		if m := podRe.FindStringSubmatch(el); m != nil {
			c.PodUID = strings.ReplaceAll(m[1], "_", "-")
		}
	}
	return c
}

// SubsysID is the kernel's subsystem id of t's v1 hierarchy (the line of
// its first controller in /proc/cgroups, which lists them in id order), or
// -1 for the unified hierarchy: what BPF needs to find a task's cgroup in
// that hierarchy.
func SubsysID(t Target) (int, error) {
	if t.H.V2 {
		return -1, nil
	}
	f, err := os.Open("/proc/cgroups")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/cgroups: %w", err)
	}
	defer f.Close()
	return subsysID(f, t)
}

func subsysID(r io.Reader, t Target) (int, error) {
	sc := bufio.NewScanner(r)
	id := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := strings.Fields(line + " ")[0]
		if slices.Contains(t.H.Controllers, name) {
			return id, nil
		}
		id++
	}
	return 0, fmt.Errorf("-G %s: the v1 hierarchy at %s has no controller the kernel lists (%s); name the cgroup by its path in the unified hierarchy", t.Name, t.H.Mount, strings.Join(t.H.Controllers, ","))
}

// OpenForPerf opens t's directory for perf_event_open's cgroup mode
// (PERF_FLAG_PID_CGROUP): perf events follow the tasks of a v2 cgroup, or
// of a v1 one in the perf_event hierarchy only.
func (t Target) OpenForPerf() (int, error) {
	if !t.H.V2 && !slices.Contains(t.H.Controllers, "perf_event") {
		return -1, fmt.Errorf("-G %s: %s is a cgroup v1 hierarchy of %s; perf events follow the unified (v2) hierarchy or v1's perf_event one", t.Name, t.H.Mount, strings.Join(t.H.Controllers, ","))
	}
	fd, err := unix.Open(t.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("-G %s: %w", t.Name, err)
	}
	return fd, nil
}
