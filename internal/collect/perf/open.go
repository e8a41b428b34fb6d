package perf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bitBuildID asks MMAP2 records to carry the build-id (Linux 5.12+); not yet
// named in x/sys.
const bitBuildID = uint64(1) << 34

// Context markers in call chains (PERF_CONTEXT_*), as unsigned values.
const (
	ContextHV     = ^uint64(32) + 1
	ContextKernel = ^uint64(128) + 1
	ContextUser   = ^uint64(512) + 1
	ContextMax    = ^uint64(4095) + 1
)

// MaxStack is the deepest chain BPF stack maps hold (PERF_MAX_STACK_DEPTH).
const MaxStack = 127

// SampleType is what every sonde sampling event records.
const SampleType = unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID |
	unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD

// AttrSize is the size of perf_event_attr this code passes.
var AttrSize = unsafe.Sizeof(unix.PerfEventAttr{})

// AttrOptions describe one sampling event.
type AttrOptions struct {
	Event        Event
	Freq         uint64 // samples per second; 0 means use Period
	Period       uint64
	Callchain    bool
	Inherit      bool
	EnableOnExec bool
	SideBand     bool // mmap/comm/task records
	BuildID      bool
	Disabled     bool
	Raw          bool // tracepoint payloads (PERF_SAMPLE_RAW)
	Counting     bool // no sampling: read_format with enabled/running times
}

// NewAttr builds the perf_event_attr for opts.
func NewAttr(o AttrOptions) unix.PerfEventAttr {
	a := unix.PerfEventAttr{
		Type:        o.Event.Def.Type,
		Config:      o.Event.Def.Config,
		Sample_type: SampleType,
	}
	a.Size = uint32(unsafe.Sizeof(a))
	if o.Freq > 0 {
		a.Sample = o.Freq
		a.Bits |= unix.PerfBitFreq
	} else {
		a.Sample = o.Period
	}
	if o.Callchain {
		a.Sample_type |= unix.PERF_SAMPLE_CALLCHAIN
	}
	if o.Raw {
		a.Sample_type |= unix.PERF_SAMPLE_RAW
	}
	if o.Counting {
		a.Sample, a.Sample_type = 0, 0
		a.Bits &^= unix.PerfBitFreq
		a.Read_format = unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING
	}
	if o.Event.ExcludeUser {
		a.Bits |= unix.PerfBitExcludeUser
	}
	if o.Event.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel
	}
	if o.Inherit {
		a.Bits |= unix.PerfBitInherit
	}
	if o.EnableOnExec {
		a.Bits |= unix.PerfBitEnableOnExec
	}
	if o.Disabled {
		a.Bits |= unix.PerfBitDisabled
	}
	if o.SideBand {
		a.Bits |= unix.PerfBitMmap | unix.PerfBitComm | unix.PerfBitTask | unix.PerfBitMmap2 | unix.PerfBitCommExec
		if o.BuildID {
			a.Bits |= bitBuildID
		}
	}
	// Timestamps on every record let us order side-band records against
	// samples from other CPUs; CLOCK_MONOTONIC lets us compare with our clock.
	a.Bits |= unix.PerfBitSampleIDAll | unix.PerfBitUseClockID | unix.PerfBitExcludeHv
	a.Clockid = unix.CLOCK_MONOTONIC
	if !o.Counting {
		// Wake the reader once a quarter of the ring is full, not per sample.
		a.Bits |= unix.PerfBitWatermark
		a.Wakeup = 64 * 1024
	}
	return a
}

// Open calls perf_event_open and turns failures into one actionable line.
func Open(attr *unix.PerfEventAttr, pid, cpu, group int, ev Event) (int, error) {
	return open(attr, pid, cpu, group, 0, ev)
}

// OpenCgroup opens ev on cpu for the tasks of the cgroup whose directory
// is open as cgroupFD (perf -G: the v2 hierarchy or v1's perf_event one).
func OpenCgroup(attr *unix.PerfEventAttr, cgroupFD, cpu int, ev Event) (int, error) {
	return open(attr, cgroupFD, cpu, -1, unix.PERF_FLAG_PID_CGROUP, ev)
}

func open(attr *unix.PerfEventAttr, pid, cpu, group, flags int, ev Event) (int, error) {
	for {
		fd, err := unix.PerfEventOpen(attr, pid, cpu, group, flags|unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			return fd, nil
		}
		if errors.Is(err, unix.EINVAL) && attr.Bits&bitBuildID != 0 {
			// Kernels before 5.12 do not know build-id in MMAP2; read it from files.
			attr.Bits &^= bitBuildID
			continue
		}
		if flags&unix.PERF_FLAG_PID_CGROUP != 0 {
			pid = -1 // an fd, not a process
		}
		return -1, OpenError(err, pid, cpu, ev)
	}
}

// OpenError explains a perf_event_open failure.
func OpenError(err error, pid, cpu int, ev Event) error {
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("no permission to open event %s: need CAP_PERFMON (or root), or lower kernel.perf_event_paranoid (now %s; e.g. sysctl kernel.perf_event_paranoid=1)", ev, paranoid())
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("no such process or thread: %d", pid)
	case (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)) && ev.Def.Kind != KindSoftware:
		return fmt.Errorf("event %s is not supported: this CPU has no usable hardware PMU (common in VMs); use a software event such as cpu-clock", ev)
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("event %s cannot sample on this kernel: %w", ev, err)
	case errors.Is(err, unix.EMFILE):
		return fmt.Errorf("too many open files opening %s on cpu %d: raise the limit with ulimit -n", ev, cpu)
	case errors.Is(err, unix.EINVAL) && cpu >= 0:
		return fmt.Errorf("opening %s on cpu %d: invalid (offline CPU, or frequency above kernel.perf_event_max_sample_rate?): %w", ev, cpu, err)
	}
	return fmt.Errorf("perf_event_open %s (pid %d, cpu %d): %w", ev, pid, cpu, err)
}

func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// OnlineCPUs parses /sys/devices/system/cpu/online.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("reading online CPUs: %w", err)
	}
	return ParseCPUList(strings.TrimSpace(string(b)))
}

// ParseCPUList parses "0-3,5" style lists.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(strings.TrimSpace(hi))
			if err != nil || b < a || b-a > 65536 {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// Enable starts counting on fd.
func Enable(fd int) error {
	return unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0)
}

// Disable stops counting on fd.
func Disable(fd int) error {
	return unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
}

// ID returns the kernel's id of an event (what PERF_SAMPLE_IDENTIFIER carries).
func ID(fd int) (uint64, error) {
	var id uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return 0, errno
	}
	return id, nil
}

// SetFilter installs a tracepoint filter expression.
func SetFilter(fd int, filter string) error {
	b := append([]byte(filter), 0)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_SET_FILTER), uintptr(unsafe.Pointer(&b[0])))
	if errno != 0 {
		return errno
	}
	return nil
}

// Counter is one read of a counting event.
type Counter struct {
	Value, Enabled, Running uint64
}

// ReadCounter reads value and times (read_format ENABLED|RUNNING).
func ReadCounter(fd int) (Counter, error) {
	var b [24]byte
	n, err := unix.Read(fd, b[:])
	if err != nil {
		return Counter{}, err
	}
	if n < 24 {
		return Counter{}, fmt.Errorf("short counter read")
	}
	return Counter{Value: le64(b[:]), Enabled: le64(b[8:]), Running: le64(b[16:])}, nil
}

// SetOutput redirects fd's records into the ring of target (same CPU).
func SetOutput(fd, target int) error {
	return unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, target)
}

// MaxFilterLen is the longest tracepoint filter the kernel takes: it
// copies the string with strndup_user(…, PAGE_SIZE), the NUL included, and
// refuses a longer one with EINVAL.
func MaxFilterLen() int { return os.Getpagesize() - 1 }

// FilterClauses counts a filter's clauses (what && and || join).
func FilterClauses(filter string) int {
	return 1 + strings.Count(filter, "&&") + strings.Count(filter, "||")
}

// ShortFilter quotes a filter for a one-line message: whole when short,
// else its start and its size, so a generated filter of thousands of
// clauses does not fill the screen.
func ShortFilter(filter string) string {
	const keep = 80
	if len(filter) <= keep {
		return strconv.Quote(filter)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(filter[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes, %d clauses)", strconv.Quote(filter[:cut]), len(filter), FilterClauses(filter))
}

// FilterError is the one line for a filter the kernel refused on event:
// the filter shortened, why, and the fields the event has.
func FilterError(filter, event string, fields []string, err error) error {
	why := "the kernel rejected it"
	if len(filter) > MaxFilterLen() {
		why = fmt.Sprintf("the kernel takes at most %d bytes", MaxFilterLen())
	} else if err != nil {
		why += " (" + err.Error() + ")"
	}
	return fmt.Errorf("bad filter %s for %s: %s; fields: %s", ShortFilter(filter), event, why, strings.Join(fields, ", "))
}
