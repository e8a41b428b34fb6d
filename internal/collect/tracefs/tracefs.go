// Package tracefs finds the kernel's tracing filesystem, lists and globs
// tracepoints, reads their ids and parses their format files so the raw
// record of each event can be decoded into named fields.
package tracefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// Root returns the tracefs mount point, mounting it at /sys/kernel/tracing
// when it is not mounted (as perf does). A tracefs that is mounted but not
// readable (mode 0700 for another user) is said to be so, not "not mounted".
func Root() (string, error) {
	rootOnce.Do(func() {
		var cands []string
		if f, err := os.Open("/proc/self/mounts"); err == nil {
			cands = MountPoints(f)
			f.Close()
		}
		cands = append(cands, "/sys/kernel/tracing", "/sys/kernel/debug/tracing")
		var denied string
		for _, d := range cands {
			_, err := os.Stat(filepath.Join(d, "events"))
			if err == nil {
				rootDir = d
				return
			}
			if errors.Is(err, os.ErrPermission) && denied == "" {
				denied = d
			}
		}
		if denied != "" {
			rootErr = fmt.Errorf("tracefs at %s is not readable by this user: run as root, or give access (chmod/chgrp %s, or mount it with a gid= option)", denied, denied)
			return
		}
		err := unix.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, "")
		if err == nil {
			rootDir = "/sys/kernel/tracing"
			return
		}
		rootErr = fmt.Errorf("tracefs is not mounted and mounting it failed (%v): run as root or mount -t tracefs nodev /sys/kernel/tracing", err)
	})
	return rootDir, rootErr
}

// MountPoints lists where /proc/self/mounts says tracefs is mounted (and
// debugfs's tracing directory), in the order given.
func MountPoints(r io.Reader) []string {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		// Mount points escape spaces and tabs as octal (\040).
		dir := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\134`, `\`).Replace(f[1])
		switch f[2] {
		case "tracefs":
			out = append(out, dir)
		case "debugfs":
			out = append(out, filepath.Join(dir, "tracing"))
		}
	}
	return out
}

// Events lists every tracepoint as "subsystem:name", sorted.
func Events() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(root, "available_events"))
	if err != nil {
		return nil, fmt.Errorf("listing tracepoints: %w", err)
	}
	defer f.Close()
	return ParseAvailableEvents(f)
}

// ParseAvailableEvents reads the available_events format.
func ParseAvailableEvents(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, ":") {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}

// Glob returns the tracepoints matching a "subsys:name" pattern with shell
// wildcards; an error names the nearest events when nothing matches.
func Glob(pattern string, all []string) ([]string, error) {
	var out []string
	for _, e := range all {
		if ok, _ := path.Match(pattern, e); ok {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tracepoint matches %q", pattern)
	}
	return out, nil
}

// IsTracepointSpec reports whether s names tracepoints (has a colon and no
// path-like u:/k: probe prefix).
func IsTracepointSpec(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.HasPrefix(s, "u:") && !strings.HasPrefix(s, "k:")
}

// EventDir is the directory of one event.
func EventDir(event string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	sys, name, ok := strings.Cut(event, ":")
	if !ok {
		return "", fmt.Errorf("bad tracepoint %q (want subsystem:name)", event)
	}
	return filepath.Join(root, "events", sys, name), nil
}

// ID returns the perf config id of an event.
func ID(event string) (uint64, error) {
	dir, err := EventDir(event)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "id"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("no such tracepoint %q", event)
		}
		return 0, fmt.Errorf("reading id of %s: %w", event, err)
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// ReadFormat parses an event's format file.
func ReadFormat(event string) (*Format, error) {
	dir, err := EventDir(event)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, "format"))
	if err != nil {
		return nil, fmt.Errorf("reading format of %s: %w", event, err)
	}
	defer f.Close()
	fm, err := ParseFormat(f)
	if err != nil {
		return nil, fmt.Errorf("format of %s: %w", event, err)
	}
	return fm, nil
}
