package model

import (
	"reflect"
	"testing"
)

// TestStacksForget: a stack keeps its id after its locations are
// forgotten, a new stack gets the next id, and the leaves of forgotten
// stacks stay known (the naming pass keeps their functions' code).
func TestStacksForget(t *testing.T) {
	var p Profile
	var s Stacks
	a := s.ID(&p, []int32{3, 1, 0})
	b := s.ID(&p, []int32{5, 1, 0})
	if a != 0 || b != 1 || s.ID(&p, []int32{3, 1, 0}) != a {
		t.Fatalf("ids %d %d, want 0 1 and the first again", a, b)
	}
	s.Forget(&p)
	if len(p.Stacks) != 0 || p.StackBase != 2 {
		t.Fatalf("after Forget: %v from %d, want none from 2", p.Stacks, p.StackBase)
	}
	if got := s.ID(&p, []int32{5, 1, 0}); got != b {
		t.Errorf("a forgotten stack seen again: id %d, want %d", got, b)
	}
	c := s.ID(&p, []int32{70, 3})
	if c != 2 || !reflect.DeepEqual(p.Stacks, [][]int32{{70, 3}}) {
		t.Errorf("a new stack after Forget: id %d, stacks %v, want 2, [[70 3]]", c, p.Stacks)
	}
	// Prefixes and suffixes of a stack are other stacks.
	if s.ID(&p, []int32{3, 1}) == a || s.ID(&p, []int32{1, 0}) == a || s.ID(&p, nil) == a {
		t.Error("a stack's prefix or suffix took its id")
	}
	want := map[int32]bool{3: true, 5: true, 70: true, 1: true}
	if got := s.Leaves(); !reflect.DeepEqual(got, want) {
		t.Errorf("leaves %v, want %v", got, want)
	}
}
