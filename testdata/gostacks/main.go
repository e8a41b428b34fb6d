// gostacks is a Go workload whose stacks a profiler must walk to their
// roots: the runtime switches stacks under it (systemstack, mcall,
// morestack, the g0 stack of vDSO clock reads) in each mode.
//
// usage: gostacks MODE SECONDS
//
//	cpu     CPU-bound goroutines in a call chain (main.spin under main.chain)
//	timers  300 goroutines on 1 ms tickers (the scheduler, timers, time.Now)
//	gc      an allocator that keeps the garbage collector busy
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// spin is the leaf the CPU time is spent in.
//
//go:noinline
func spin(n int) (x int) {
	for i := range n {
		x ^= i * 31
	}
	return x
}

//go:noinline
func chain(d, n int) int {
	if d == 0 {
		return spin(n)
	}
	return chain(d-1, n) + 1
}

func cpu(end time.Time) int {
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for g := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				sums[g] += chain(8, 200000)
			}
		}()
	}
	wg.Wait()
	return sums[0]
}

func timers(end time.Time) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ticks := 0
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for now := range t.C {
				if now.After(end) {
					return
				}
				mu.Lock()
				ticks++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ticks
}

type node struct {
	next *node
	pad  [48]byte
}

//go:noinline
func allocate(n int) *node {
	var head *node
	for i := 0; i < n; i++ {
		head = &node{next: head}
	}
	return head
}

func gc(end time.Time) int {
	var wg sync.WaitGroup
	kept := make([]*node, 2)
	for g := range kept {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				kept[g] = allocate(20000)
			}
		}()
	}
	wg.Wait()
	return len(kept)
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gostacks cpu|timers|gc SECONDS")
		os.Exit(2)
	}
	secs, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostacks:", err)
		os.Exit(2)
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	modes := map[string]func(time.Time) int{"cpu": cpu, "timers": timers, "gc": gc}
	run, ok := modes[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, "gostacks: unknown mode", os.Args[1])
		os.Exit(2)
	}
	fmt.Println(run(end))
}
