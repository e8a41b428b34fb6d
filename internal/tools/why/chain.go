package why

import (
	"github.com/sonde-dev/sonde/internal/model/jsonout"
)

// maxHops bounds a chain (the program follows wakers max_depth hops).
const maxHops = 6

// waker is the threads that ended some waits, grouped by name and by the
// function they woke from (a pool of threads doing the same thing is one
// waker).
type waker struct {
	key   string
	ns    uint64
	heavy *Wait
	waits []*Wait
}

// dominant groups waits by waker and returns the one that ended most of
// their time, and the total.
func dominant(cur []*Wait) (*waker, uint64) {
	var total uint64
	ws := map[string]*waker{}
	var best *waker
	for _, w := range cur {
		total += w.NS
		k := wakerKey(w)
		g := ws[k]
		if g == nil {
			g = &waker{key: k}
			ws[k] = g
		}
		g.ns += w.NS
		g.waits = append(g.waits, w)
		if g.heavy == nil || w.NS > g.heavy.NS {
			g.heavy = w
		}
		if best == nil || g.ns > best.ns || (g.ns == best.ns && g.key < best.key) {
			best = g
		}
	}
	return best, total
}

func wakerKey(w *Wait) string {
	if w.WakerTid == 0 && w.WakerComm == "" {
		return "\x00none"
	}
	if irq := Interrupt(w.WakerFrames); irq != "" || w.WakerTid == 0 || kernelThread(w.WakerComm) {
		return "\x00irq/" + irq
	}
	return w.WakerComm + "\x00" + Anchor(w.WakerFrames, "")
}

// rootOf is the root a chain ends at when a wait of this reason is ended
// by an interrupt of this kind (or by nothing the program can follow).
func rootOf(reason, irq string) string {
	switch {
	case irq == "timer" || reason == ReasonSleep:
		return "sleep"
	case irq == "device" || reason == ReasonDisk || reason == ReasonFault:
		return "device"
	case irq == "network" || reason == ReasonNet:
		return "peer"
	}
	return "unknown"
}

// chain follows the waits cur (of reason) from waker to waker: each hop
// is the waker that ended most of the time, and how it had itself been
// held up just before (its last block). It ends at a root: cpu (the
// waker had been running), sleep, device, peer (a wake from an interrupt
// or a kernel thread, or a block nothing followed), or cycle.
func chain(cur []*Wait, reason string, byTid map[int][]*Wait, _ map[int]bool) ([]Link, string) {
	var links []Link
	seen := map[string]bool{}
	for hop := 0; hop < maxHops; hop++ {
		g, total := dominant(cur)
		if g == nil || total == 0 || g.key == "\x00none" {
			if hop == 0 {
				return nil, "" // never woken while traced
			}
			return links, rootOf(reason, "")
		}
		h := g.heavy
		l := Link{Task: jsonout.Task{PID: h.WakerPid, TID: h.WakerTid, Comm: h.WakerComm}, Share: float64(g.ns) / float64(total), Frames: h.WakerFrames}
		if len(g.key) > 4 && g.key[:5] == "\x00irq/" {
			l.Reason, l.Interrupt = "interrupt", g.key[5:]
			if l.Interrupt == "" {
				l.Interrupt = "kernel thread " + h.WakerComm
			}
			if hop == 0 {
				links = append(links, l)
			}
			return links, rootOf(reason, g.key[5:])
		}
		if seen[g.key] {
			l.Reason = "cycle"
			return append(links, l), "cycle"
		}
		seen[g.key] = true
		last, next := lastBlock(g, byTid)
		if last == nil {
			// Following the waker began with this wake, or it had been
			// running longer than it had waited: its own work is the root.
			l.Reason = "cpu"
			return append(links, l), "cpu"
		}
		l.Reason = Classify(last.WakerLast, last.WakerLastSyscall)
		l.Syscall, l.WaitFrames = last.WakerLastSyscall, last.WakerLast
		var n, c uint64
		for _, w := range g.waits {
			if w.WakerLastKnown {
				n += w.WakerLastNS
				c += w.Count
			}
		}
		if c > 0 {
			l.WaitNS = jsonout.Nanos(n / c)
		}
		links = append(links, l)
		if len(next) == 0 {
			return links, rootOf(l.Reason, "")
		}
		cur, reason = next, l.Reason
	}
	return links, "unknown"
}

// lastBlock is the waker group's typical last block before its wakes
// (nil when it had mostly been running, or is not known), and the
// waker's own waits at that block, to follow next.
func lastBlock(g *waker, byTid map[int][]*Wait) (*Wait, []*Wait) {
	var ran, waited uint64
	byLast := map[string]uint64{}
	var heavy *Wait
	var best string
	for _, w := range g.waits {
		if !w.WakerLastKnown {
			continue
		}
		ran += w.WakerRanNS
		waited += w.WakerLastNS
		k := Classify(w.WakerLast, w.WakerLastSyscall) + "\x00" + Anchor(w.WakerLast, w.WakerLastSyscall)
		byLast[k] += w.NS
		if best == "" || byLast[k] > byLast[best] {
			best = k
		}
	}
	if best == "" || ran > waited {
		return nil, nil
	}
	want := map[int]map[string]bool{}
	for _, w := range g.waits {
		if !w.WakerLastKnown || Classify(w.WakerLast, w.WakerLastSyscall)+"\x00"+Anchor(w.WakerLast, w.WakerLastSyscall) != best {
			continue
		}
		if heavy == nil || w.NS > heavy.NS {
			heavy = w
		}
		if want[w.WakerTid] == nil {
			want[w.WakerTid] = map[string]bool{}
		}
		want[w.WakerTid][w.wakerLast] = true
	}
	var next []*Wait
	for tid, stacks := range want {
		for _, w := range byTid[tid] {
			if stacks[w.stack] {
				next = append(next, w)
			}
		}
	}
	return heavy, next
}
