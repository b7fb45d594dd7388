package reference

import (
	"sync"
	"time"
)

// localLocks is the process-local-lock defect's lock: one in-process mutex
// per scope. It serialises a scope's claims inside one process only, which
// is all a single-replica test can see.
type localLocks struct {
	mu    sync.Mutex
	locks map[Scope]*localLock
}

type localLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when none is left
}

func newLocalLocks() *localLocks { return &localLocks{locks: map[Scope]*localLock{}} }

// lock takes s's mutex and returns its unlock.
func (l *localLocks) lock(s Scope) (unlock func()) {
	l.mu.Lock()
	e := l.locks[s]
	if e == nil {
		e = &localLock{}
		l.locks[s] = e
	}
	e.users++
	l.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.locks, s)
		}
		l.mu.Unlock()
	}
}

// processLocalLock is the process-local-lock defect: the lookup and the
// write of the claim are guarded by an in-process mutex instead of being
// one atomic store operation. Inside one process that is indistinguishable
// from the correct claim; two replicas on one store both find the scope
// free during the gap and both execute (the insert wins regardless).
func (x *exchange) processLocalLock() {
	if !x.m.unfinished.finish(x.r.Context(), x.m, x.scope) {
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	unlock := x.m.localLocks.lock(x.scope)
	rec, err := x.m.store.Lookup(x.r.Context(), x.scope)
	if err != nil {
		unlock()
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	// An in-flight record whose lease ended is free to reclaim, as in the
	// correct path.
	if rec != nil && (rec.State != InFlight || time.Now().Before(rec.LockedUntil)) {
		unlock()
		if x.existing(rec) == runUnowned {
			x.execute("", false)
		}
		return
	}
	if sleepCtx(x.r.Context(), x.m.checkThenInsertGap) != nil {
		unlock()
		return
	}
	ttl, lease := x.m.ttlAndLease()
	c, err := x.m.store.Claim(x.r.Context(), ClaimRequest{Scope: x.scope, Fingerprint: x.fingerprint(), RawHash: x.rawHash(), Lease: lease, TTL: ttl})
	unlock()
	if err != nil {
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	x.execute(c.Token, c.Outcome == Claimed)
}
