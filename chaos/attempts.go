package chaos

// attemptCounts numbers the attempts of each key in two generations: when
// the current one holds max keys it becomes the old one and the previous
// old one is dropped. Memory stays within 2×max keys, and a key retried
// within the last max new keys keeps its numbering.
type attemptCounts struct {
	max      int
	cur, old map[string]*int
}

func newAttemptCounts(max int) attemptCounts {
	return attemptCounts{max: max, cur: map[string]*int{}}
}

// next returns key's attempt number (1 for its first attempt).
func (a *attemptCounts) next(key string) int {
	if n := a.cur[key]; n != nil {
		*n++
		return *n
	}
	n := a.old[key] // nil when unknown
	delete(a.old, key)
	if n == nil {
		n = new(int)
	}
	if len(a.cur) >= a.max {
		a.old, a.cur = a.cur, map[string]*int{}
	}
	*n++
	a.cur[key] = n
	return *n
}

// nextBytes is next for a key still in a request's bytes: a key of the
// current generation costs no allocation.
func (a *attemptCounts) nextBytes(key []byte) int {
	if n := a.cur[string(key)]; n != nil {
		*n++
		return *n
	}
	return a.next(string(key))
}
