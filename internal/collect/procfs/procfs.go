// Package procfs reads the /proc files sonde needs: mappings, names, threads.
// Parsers take an io.Reader so they are tested without root or live processes.
package procfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Perms      string
	Offset     uint64
	Dev        string
	Inode      uint64
	Path       string
}

// Exec reports whether the mapping is executable.
func (m Mapping) Exec() bool { return len(m.Perms) >= 3 && m.Perms[2] == 'x' }

// ParseMaps parses the /proc/PID/maps format.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("bad maps line %q", line)
		}
		var m Mapping
		var err error
		if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
			return nil, fmt.Errorf("bad maps line %q: %w", line, err)
		}
		if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil {
			return nil, fmt.Errorf("bad maps line %q: %w", line, err)
		}
		m.Perms = f[1]
		if m.Offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
			return nil, fmt.Errorf("bad maps line %q: %w", line, err)
		}
		m.Dev = f[3]
		m.Inode, _ = strconv.ParseUint(f[4], 10, 64)
		if len(f) >= 6 {
			// Paths may contain spaces: take the rest of the line after the inode.
			idx := strings.Index(line, f[5])
			m.Path = strings.TrimSpace(line[idx:])
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ReadMaps reads /proc/PID/maps.
func ReadMaps(pid int) ([]Mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseMaps(f)
}

// Comm reads the name of a process or thread.
func Comm(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		b, _ = os.ReadFile(fmt.Sprintf("/proc/%d/comm", tid))
	}
	return strings.TrimSpace(string(b))
}

// Threads lists the thread ids of pid.
func Threads(pid int) ([]int, error) {
	ids, err := numericEntries(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("no such process: %d", pid)
		}
		return nil, fmt.Errorf("listing threads of %d: %w", pid, err)
	}
	return ids, nil
}

// Pids lists every process id in /proc.
func Pids() ([]int, error) {
	ids, err := numericEntries("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing /proc: %w", err)
	}
	return ids, nil
}

// numericEntries lists the entries of dir that are numbers (ids), sorted.
func numericEntries(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, id)
		}
	}
	sort.Ints(out)
	return out, nil
}

// TGID returns the process id owning thread tid.
func TGID(tid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, fmt.Errorf("no such thread: %d", tid)
		}
		return 0, err
	}
	defer f.Close()
	return ParseTgid(f)
}

// ParseTgid extracts Tgid from a /proc/PID/status file.
func ParseTgid(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no Tgid in status")
}
