package why

import (
	"path"
	"strings"
)

// Reasons a thread is blocked, as the budget and the findings name them.
const (
	ReasonDisk  = "disk"  // disk I/O
	ReasonNet   = "net"   // network or poll
	ReasonLock  = "lock"  // futex or a kernel lock
	ReasonSleep = "sleep" // a timed sleep
	ReasonFault = "fault" // a page fault or memory reclaim
	ReasonPipe  = "pipe"
	ReasonOther = "other"
)

// Reasons in the order the budget lists them.
var Reasons = []string{ReasonDisk, ReasonNet, ReasonLock, ReasonSleep, ReasonFault, ReasonPipe, ReasonOther}

// reasonWords say each reason in a sentence.
var reasonWords = map[string]string{
	ReasonDisk: "disk I/O", ReasonNet: "network/poll", ReasonLock: "futex/lock", ReasonSleep: "sleep",
	ReasonFault: "page fault/reclaim", ReasonPipe: "pipe", ReasonOther: "other",
}

// kernelReasons: kernel functions that say why a thread blocked, checked
// leaf first (the innermost one that says anything decides). Prefixes.
var kernelReasons = []struct{ prefix, reason string }{
	{"handle_mm_fault", ReasonFault}, {"do_user_addr_fault", ReasonFault}, {"exc_page_fault", ReasonFault},
	{"do_page_fault", ReasonFault}, {"filemap_fault", ReasonFault}, {"do_swap_page", ReasonFault},
	{"__alloc_pages_slowpath", ReasonFault}, {"try_to_free_pages", ReasonFault}, {"shrink_", ReasonFault},
	{"mem_cgroup_handle_over_high", ReasonFault},
	{"pipe_read", ReasonPipe}, {"pipe_write", ReasonPipe}, {"pipe_wait", ReasonPipe}, {"wait_for_partner", ReasonPipe},
	{"futex_", ReasonLock}, {"__futex_", ReasonLock}, {"do_futex", ReasonLock}, {"rt_mutex", ReasonLock},
	{"rwsem_down", ReasonLock}, {"__mutex_lock", ReasonLock}, {"mutex_lock", ReasonLock}, {"flock_lock", ReasonLock},
	{"do_nanosleep", ReasonSleep}, {"hrtimer_nanosleep", ReasonSleep}, {"common_nsleep", ReasonSleep}, {"msleep", ReasonSleep},
	{"do_sys_poll", ReasonNet}, {"do_select", ReasonNet}, {"core_sys_select", ReasonNet}, {"ep_poll", ReasonNet},
	{"do_epoll_wait", ReasonNet}, {"sk_wait_data", ReasonNet}, {"inet_csk_accept", ReasonNet}, {"__skb_wait_for_more_packets", ReasonNet},
	{"__skb_recv_udp", ReasonNet}, {"tcp_recvmsg", ReasonNet}, {"unix_stream_read", ReasonNet}, {"sk_stream_wait", ReasonNet},
	{"inet_wait_for_connect", ReasonNet}, {"sock_", ReasonNet},
	{"io_schedule", ReasonDisk}, {"blk_", ReasonDisk}, {"bio_", ReasonDisk}, {"submit_bio_wait", ReasonDisk},
	{"__blkdev_direct_IO", ReasonDisk}, {"blkdev_", ReasonDisk}, {"iomap_dio", ReasonDisk}, {"folio_wait", ReasonDisk},
	{"wait_on_page", ReasonDisk}, {"__folio_lock", ReasonDisk}, {"jbd2_", ReasonDisk}, {"file_write_and_wait", ReasonDisk},
	{"balance_dirty_pages", ReasonDisk}, {"io_uring", ReasonDisk}, {"aio_", ReasonDisk},
}

// syscallReasons: when no kernel frame says, the syscall the thread is in.
var syscallReasons = map[string]string{
	"futex": ReasonLock, "futex_waitv": ReasonLock, "flock": ReasonLock,
	"nanosleep": ReasonSleep, "clock_nanosleep": ReasonSleep, "pause": ReasonSleep,
	"poll": ReasonNet, "ppoll": ReasonNet, "select": ReasonNet, "pselect6": ReasonNet, "epoll_wait": ReasonNet,
	"epoll_pwait": ReasonNet, "epoll_pwait2": ReasonNet, "recvfrom": ReasonNet, "recvmsg": ReasonNet, "recvmmsg": ReasonNet,
	"accept": ReasonNet, "accept4": ReasonNet, "connect": ReasonNet, "sendto": ReasonNet, "sendmsg": ReasonNet,
	"fsync": ReasonDisk, "fdatasync": ReasonDisk, "sync_file_range": ReasonDisk, "io_getevents": ReasonDisk,
	"io_pgetevents": ReasonDisk, "io_uring_enter": ReasonDisk, "sync": ReasonDisk, "syncfs": ReasonDisk,
}

// Classify says why a thread blocked, from its stack (kernel frames, leaf
// first) and the syscall it was in ("" outside one).
func Classify(frames []Frame, syscall string) string {
	// A fault anywhere in the kernel stack decides first: the disk wait
	// of a page read in is the fault's.
	for _, f := range frames {
		if !f.Kernel {
			break
		}
		for _, kr := range kernelReasons {
			if kr.reason == ReasonFault && strings.HasPrefix(f.Sym, kr.prefix) {
				return ReasonFault
			}
		}
	}
	for _, f := range frames {
		if !f.Kernel {
			break
		}
		for _, kr := range kernelReasons {
			if strings.HasPrefix(f.Sym, kr.prefix) {
				return kr.reason
			}
		}
	}
	if r, ok := syscallReasons[syscall]; ok {
		return r
	}
	return ReasonOther
}

// interruptFrames: a wake from these came from an interrupt, not from the
// task it interrupted (loopback's softirq run from a sender's
// local_bh_enable has none of them: that sender is the waker).
var interruptFrames = []string{"asm_sysvec_", "sysvec_", "asm_common_interrupt", "common_interrupt", "irq_exit", "__irq_exit_rcu",
	"el1_interrupt", "el0_interrupt", "gic_handle_irq", "handle_domain_irq", "hrtimer_wakeup"}

// Interrupt says what kind of interrupt a waker's kernel stack is in:
// "timer", "device", "network", "irq", or "" for none.
func Interrupt(frames []Frame) string {
	in := false
	kind := "irq"
	for _, f := range frames {
		if !f.Kernel {
			break
		}
		for _, p := range interruptFrames {
			if strings.HasPrefix(f.Sym, p) {
				in = true
			}
		}
		switch {
		case strings.HasPrefix(f.Sym, "hrtimer_"), strings.HasPrefix(f.Sym, "__hrtimer_"), strings.HasPrefix(f.Sym, "process_timeout"), strings.HasPrefix(f.Sym, "call_timer_fn"):
			if kind == "irq" {
				kind = "timer"
			}
		case strings.HasPrefix(f.Sym, "blk_"), strings.HasPrefix(f.Sym, "nvme_"), strings.HasPrefix(f.Sym, "virtblk"), strings.HasPrefix(f.Sym, "scsi_"), strings.HasPrefix(f.Sym, "bio_endio"):
			if kind == "irq" {
				kind = "device"
			}
		case strings.HasPrefix(f.Sym, "net_rx_action"), strings.HasPrefix(f.Sym, "napi_"), strings.HasPrefix(f.Sym, "virtnet_"), strings.HasPrefix(f.Sym, "e1000"):
			if kind == "irq" {
				kind = "network"
			}
		}
	}
	if !in {
		return ""
	}
	return kind
}

// kernelThread says whether a comm names a kernel worker (no user side
// to follow: the wake stands for a device, a timer or the network).
func kernelThread(comm string) bool {
	for _, p := range []string{"kworker/", "ksoftirqd/", "irq/", "rcu_", "kswapd", "jbd2/", "migration/", "kthreadd", "swapper"} {
		if strings.HasPrefix(comm, p) {
			return true
		}
	}
	return false
}

// systemObject says whether a frame is in the C library or the loader:
// the function named as a wait's place is the first caller outside them.
func systemObject(dso string) bool {
	b := path.Base(dso)
	for _, p := range []string{"libc.so", "libc-", "libpthread", "ld-linux", "ld-musl", "libc.musl", "[vdso]", "libstdc++"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// Anchor is the function a wait or a slice is charged to: the innermost
// user frame outside the C library, else the innermost user frame, else
// the syscall, else the innermost kernel frame.
func Anchor(frames []Frame, syscall string) string {
	first := ""
	for _, f := range frames {
		if f.Kernel {
			continue
		}
		if first == "" {
			first = f.Sym
		}
		if !systemObject(f.DSO) {
			return f.Sym
		}
	}
	if first != "" {
		return first
	}
	if syscall != "" {
		return syscall
	}
	if len(frames) > 0 {
		return frames[0].Sym
	}
	return "[unknown]"
}

// leafUser is the innermost user frame (the call a thread is blocked in,
// as the program sees it: poll, usleep, pthread_mutex_lock).
func leafUser(frames []Frame) string {
	for _, f := range frames {
		if !f.Kernel {
			return f.Sym
		}
	}
	return ""
}
