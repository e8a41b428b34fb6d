package main

import (
	"strings"
	"testing"
)

// TestFoldedStacksDistinct checks what the flame-graph case relies on:
// in both shapes, every stack number gives a different stack, 10 to 60
// frames deep, with no name that breaks the folded format.
func TestFoldedStacksDistinct(t *testing.T) {
	for _, tails := range []bool{false, true} {
		stacksDistinct(t, newStackGen(tails))
	}
}

func stacksDistinct(t *testing.T, g *stackGen) {
	const n = 200000
	seen := make(map[string]uint64, n)
	for x := uint64(0); x < n; x++ {
		line := foldedLine(g, x)
		if y, ok := seen[line]; ok {
			t.Fatalf("stacks %d and %d are the same: %s", y, x, line)
		}
		seen[line] = x
		if g.depth < 10 || g.depth > 60 {
			t.Fatalf("stack %d has %d frames: %s", x, g.depth, line)
		}
		if strings.ContainsAny(line, "\n\t") || strings.Count(line, ";") != g.depth-1 {
			t.Fatalf("stack %d breaks the format: %q", x, line)
		}
	}
}
