package unwindtable

import (
	"errors"
	"sync"
)

// Rules is a dictionary of distinct rules shared by every table the walker
// loads. A file has a few hundred distinct rules for tens of thousands of rows
// (python3.11: 336 for 64,575), so rows can carry a 16-bit rule index instead
// of the 8-byte rule: 6 bytes per row instead of 12 (see Table.Compact).
// Safe for concurrent use.
type Rules struct {
	mu    sync.Mutex
	index map[Rule]uint16
	list  []Rule
}

// MaxRules is how many distinct rules a dictionary holds.
const MaxRules = 1 << 16

// ErrRulesFull says a dictionary has MaxRules rules already.
var ErrRulesFull = errors.New("unwind rule dictionary full")

// Index returns the rule's index, adding it if it is new.
func (d *Rules) Index(r Rule) (uint16, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i, ok := d.index[r]; ok {
		return i, nil
	}
	if len(d.list) >= MaxRules {
		return 0, ErrRulesFull
	}
	if d.index == nil {
		d.index = map[Rule]uint16{}
	}
	i := uint16(len(d.list))
	d.index[r] = i
	d.list = append(d.list, r)
	return i, nil
}

// Len is the number of rules held.
func (d *Rules) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.list)
}

// Rule returns the rule at index i.
func (d *Rules) Rule(i uint16) Rule {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.list[i]
}

// Encode returns every rule in index order, RuleSize bytes each.
func (d *Rules) Encode() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := make([]byte, 0, len(d.list)*RuleSize)
	for _, r := range d.list {
		b = r.Encode(b)
	}
	return b
}

// CompactRowSize is the size of a row in the compact form: a 32-bit pc and a
// 16-bit rule index, kept in two parallel arrays so neither needs padding.
const CompactRowSize = 6

// Compact returns the table as parallel arrays: pcs[i] (sorted, relative to
// Base) and rules[i], an index into d, for the same rows as t.Rows.
func (t *Table) Compact(d *Rules) (pcs []uint32, rules []uint16, err error) {
	pcs = make([]uint32, len(t.Rows))
	rules = make([]uint16, len(t.Rows))
	// A table has a few hundred distinct rules: each is looked up in the
	// shared dictionary (and its lock taken) once, not once per row.
	local := make(map[Rule]uint16, 512)
	for i, r := range t.Rows {
		pcs[i] = r.PC
		idx, ok := local[r.Rule]
		if !ok {
			if idx, err = d.Index(r.Rule); err != nil {
				return nil, nil, err
			}
			local[r.Rule] = idx
		}
		rules[i] = idx
	}
	return pcs, rules, nil
}
