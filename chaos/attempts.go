package chaos

// attemptCounts numbers the attempts of each key in two generations: when
// the current one holds max keys it becomes the old one and the previous
// old one is dropped. Memory stays within 2×max keys, and a key retried
// within the last max new keys keeps its numbering.
type attemptCounts struct {
	max      int
	cur, old map[string]int
}

func newAttemptCounts(max int) attemptCounts {
	return attemptCounts{max: max, cur: map[string]int{}}
}

// next returns key's attempt number (1 for its first attempt).
func (a *attemptCounts) next(key string) int {
	n, ok := a.cur[key]
	if !ok {
		n = a.old[key] // 0 when unknown
		delete(a.old, key)
		if len(a.cur) >= a.max {
			a.old, a.cur = a.cur, map[string]int{}
		}
	}
	n++
	a.cur[key] = n
	return n
}
