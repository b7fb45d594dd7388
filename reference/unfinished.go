package reference

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// unfinished holds outcomes the store could not record: the handler ran
// and answered, then Complete failed (the store was down). Left alone, the
// record stays in flight, its lease runs out, and the first retry after the
// store's recovery takes it over and runs the handler a second time. So
// before this process claims such a scope again it stores the outcome
// first, and the retry replays it. The guarantee holds for retries that
// reach this process; another instance can still take the lease over (only
// a store that commits the effect with the record, reference.Atomic, closes
// that). Bounded: an entry dies with the record it would complete (TTL),
// and at most maxUnfinished are kept.
type unfinished struct {
	n       atomic.Int64 // len(entries), read without the lock on every request
	mu      sync.Mutex
	entries map[Scope]pendingCompletion
}

type pendingCompletion struct {
	token   string
	resp    Response
	events  []Event // the outbox events stored with resp
	expires time.Time
}

// maxUnfinished bounds the outcomes kept while the store is down.
const maxUnfinished = 10_000

func newUnfinished() *unfinished { return &unfinished{entries: map[Scope]pendingCompletion{}} }

func (u *unfinished) put(s Scope, token string, resp Response, events []Event, expires time.Time) {
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.entries) >= maxUnfinished {
		for k, e := range u.entries {
			if now.After(e.expires) {
				delete(u.entries, k)
			}
		}
		for k := range u.entries { // still full: forget arbitrary ones
			if len(u.entries) < maxUnfinished {
				break
			}
			delete(u.entries, k)
		}
	}
	u.entries[s] = pendingCompletion{token: token, resp: resp, events: events, expires: expires}
	u.n.Store(int64(len(u.entries)))
}

// finish stores a pending outcome of s, if any, before s is claimed
// again. It reports false when the store is still down (the caller answers
// 503: claiming now could take the lease over and run the handler twice).
func (u *unfinished) finish(ctx context.Context, m *middleware, s Scope) bool {
	if u.n.Load() == 0 {
		return true
	}
	u.mu.Lock()
	p, ok := u.entries[s]
	u.mu.Unlock()
	if !ok {
		return true
	}
	if time.Now().Before(p.expires) {
		err := m.complete(ctx, s, p.token, p.resp, p.events)
		if errors.Is(err, ErrNotOwner) {
			m.appendEvents(ctx, p.events)
		} else if err != nil {
			return false
		}
	}
	u.mu.Lock()
	if cur, ok := u.entries[s]; ok && cur.token == p.token {
		delete(u.entries, s)
	}
	u.n.Store(int64(len(u.entries)))
	u.mu.Unlock()
	return true
}
