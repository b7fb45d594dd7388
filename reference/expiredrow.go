package reference

import (
	"sync"
	"time"
)

// purgeLag is how long the expired-row-blocks-claim defect's expired
// record outlives its TTL before a purge removes it: long enough for a
// burst at the edge to fall in it, shorter than the grace after which a
// probe usually looks.
const purgeLag = 500 * time.Millisecond

// expiredRows is the expired-row-blocks-claim defect's memory of when
// each claimed record expires, so a claim in the purgeLag after that can
// fail on the row as the bug's insert does. Entries past their purge are
// swept a few at a time on every claim, so it stays bounded.
type expiredRows struct {
	mu      sync.Mutex
	expires map[Scope]time.Time
}

func newExpiredRows() *expiredRows { return &expiredRows{expires: map[Scope]time.Time{}} }

// claimed notes that scope's record was claimed and expires at.
func (e *expiredRows) claimed(s Scope, at time.Time) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	swept := 0
	for k, t := range e.expires {
		if swept == 8 {
			break
		}
		if now.After(t.Add(purgeLag)) {
			delete(e.expires, k)
		}
		swept++
	}
	e.expires[s] = at
}

// unpurged reports whether scope's record has expired and not yet been
// purged: the bug's insert fails on it, and its re-read, which skips
// expired records, finds nothing.
func (e *expiredRows) unpurged(s Scope) bool {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.expires[s]
	return ok && !now.Before(t) && now.Before(t.Add(purgeLag))
}
