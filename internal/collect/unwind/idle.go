package unwind

import "github.com/sonde-dev/sonde/internal/collect/unwindtable"

// IdleTableBytes bounds the memory of the tables the loader keeps while no
// traced process maps their file: enough that the next short-lived process
// of the same program (a compiler job, a shell script's children) finds
// its tables built, without growing with every binary a busy machine runs.
const IdleTableBytes = 32 << 20

// idleTables are the tables no traced process maps, oldest first, within
// a byte budget.
type idleTables struct {
	limit int
	bytes int
	q     []idleTable
}

type idleTable struct {
	key   unwindtable.Key
	bytes int
}

// add keeps key (n bytes) as idle and returns the tables that no longer
// fit, oldest first, for the caller to drop.
func (t *idleTables) add(key unwindtable.Key, n int) []unwindtable.Key {
	t.take(key)
	t.q = append(t.q, idleTable{key, n})
	t.bytes += n
	var out []unwindtable.Key
	for t.bytes > t.limit && len(t.q) > 0 {
		out = append(out, t.q[0].key)
		t.bytes -= t.q[0].bytes
		t.q = t.q[1:]
	}
	return out
}

// take marks key as in use again.
func (t *idleTables) take(key unwindtable.Key) {
	for i, e := range t.q {
		if e.key == key {
			t.bytes -= e.bytes
			t.q = append(t.q[:i], t.q[i+1:]...)
			return
		}
	}
}

// oldest removes the table idle the longest and returns it.
func (t *idleTables) oldest() (unwindtable.Key, bool) {
	if len(t.q) == 0 {
		return unwindtable.Key{}, false
	}
	e := t.q[0]
	t.q = t.q[1:]
	t.bytes -= e.bytes
	return e.key, true
}
