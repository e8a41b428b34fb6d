package perf

// Distance is the edit (Levenshtein) distance between a and b, for
// "did you mean" suggestions beyond event names.
func Distance(a, b string) int { return levenshtein(a, b) }
