package web

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// floor keeps exactly the nodes a full sort would.
func TestFloorMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{maxNodes - 1, maxNodes, maxNodes + 1, 3 * maxNodes} {
		tr := &tree{period: make([]uint64, n), sym: make([]int32, n)}
		for i := range tr.period {
			tr.period[i] = uint64(r.ExpFloat64() * 1e6)
		}
		want := uint64(0)
		if n > maxNodes {
			v := slices.Clone(tr.period)
			slices.Sort(v)
			want = v[len(v)-maxNodes] + 1
		}
		if got := tr.floor(); got != want {
			t.Errorf("%d nodes: floor %d, want %d", n, got, want)
		}
	}
}
