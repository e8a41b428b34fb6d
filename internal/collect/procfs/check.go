package procfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrNoProcess, ErrZombie and ErrNotProcess tell why a pid cannot be traced.
var (
	ErrNoProcess  = errors.New("no such process")
	ErrZombie     = errors.New("the process has exited (a zombie its parent has not reaped)")
	ErrNotProcess = errors.New("is a thread, not a process")
)

// Status is what /proc/PID/status says about a task.
type Status struct {
	Name  string
	State byte // R, S, D, T, t, X, Z, I
	Tgid  int
	Pid   int
}

// ParseStatus reads the fields of /proc/PID/status sonde needs.
func ParseStatus(r io.Reader) (Status, error) {
	var st Status
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			st.Name = v
		case "State":
			if v != "" {
				st.State = v[0]
			}
		case "Tgid":
			st.Tgid, _ = strconv.Atoi(v)
		case "Pid":
			st.Pid, _ = strconv.Atoi(v)
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if st.State == 0 || st.Pid == 0 {
		return st, errors.New("no State or Pid line")
	}
	return st, nil
}

// CheckPid says whether pid is a live process that can be traced; every
// command checks its -p targets with it, so they fail the same way.
func CheckPid(pid int) error { return checkTask(pid, true) }

// CheckTid is CheckPid for a thread id (-t).
func CheckTid(tid int) error { return checkTask(tid, false) }

func checkTask(id int, process bool) error {
	what := "pid"
	if !process {
		what = "tid"
	}
	if id <= 0 {
		return fmt.Errorf("%s %d: not a valid id", what, id)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", id))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s %d: %w", what, id, ErrNoProcess)
		}
		return fmt.Errorf("%s %d: %w", what, id, err)
	}
	defer f.Close()
	st, err := ParseStatus(f)
	if err != nil {
		return fmt.Errorf("%s %d: reading its status: %w", what, id, err)
	}
	if st.State == 'Z' || st.State == 'X' {
		return fmt.Errorf("%s %d (%s): %w", what, id, st.Name, ErrZombie)
	}
	if process && st.Tgid != st.Pid {
		return fmt.Errorf("pid %d (%s) %w of process %d: use -t %d for the thread or -p %d", id, st.Name, ErrNotProcess, st.Tgid, id, st.Tgid)
	}
	return nil
}

// CheckPids checks a list of pids and returns the first problem.
func CheckPids(pids []int) error {
	for _, p := range pids {
		if err := CheckPid(p); err != nil {
			return err
		}
	}
	return nil
}
