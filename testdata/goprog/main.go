// goprog is a Go workload for tracing tests: two functions called a known
// number of times, with goroutines whose stacks grow and move while they
// run (deep recursion), so a probe that writes to a goroutine stack would
// crash it. It prints a checksum that must not change under tracing.
//
// usage: goprog ITERATIONS [START_DELAY]  (the delay lets a tracer attach by pid)
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

// deep recurses so the goroutine stack grows (and is copied) under work.
//
//go:noinline
func deep(d int) int {
	var pad [64]byte
	pad[d%64] = byte(d)
	if d == 0 {
		return work(100) + int(pad[0])
	}
	return deep(d-1) + int(pad[d%64])
}

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: goprog ITERATIONS")
		os.Exit(2)
	}
	if len(os.Args) > 2 {
		d, err := time.ParseDuration(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: goprog ITERATIONS [START_DELAY]")
			os.Exit(2)
		}
		time.Sleep(d)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sum := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			local := 0
			for i := 0; i < n; i++ {
				local += work(1000 + g)
				if i%10 == 0 {
					local += deep(200 + i%50)
				}
			}
			mu.Lock()
			sum += local
			mu.Unlock()
		}(g)
	}
	wg.Wait()
	// Every call of deep counts, the recursive ones too.
	deepCalls := 0
	for i := 0; i < n; i += 10 {
		deepCalls += 200 + i%50 + 1
	}
	fmt.Printf("calls work=%d deep=%d checksum=%d\n", 4*n+4*((n+9)/10), 4*deepCalls, sum)
}
