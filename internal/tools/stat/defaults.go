package stat

// DefaultEvents are the events counted without -e, as perf stat counts
// them; system-wide (all) counts cpu-clock, the CPUs' time, instead of
// task-clock.
func DefaultEvents(all bool) []string {
	clock := "task-clock"
	if all {
		clock = "cpu-clock"
	}
	return []string{clock, "context-switches", "cpu-migrations", "page-faults", "cycles", "instructions", "branches", "branch-misses"}
}
