package demo

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// effects counts handler executions per idempotency key and operation: the
// oracle the conformance suite reads to tell a replay from a re-execution.
//
// A key's count is forgotten once no record of the key can exist any more
// and none of its executions is running: retain after its last execution
// started or ended (a record lives at most lease + TTL from its claim, TTL
// from its completion), plus retainSlack for a probe that comes late. A
// second execution inside the retention window therefore always finds the
// first one counted; memory stays bounded by the keys of that window.
type effects struct {
	mu        sync.Mutex
	perKey    map[string]*keyEffects
	total     opCounts
	retain    time.Duration
	now       func() time.Time
	lastSweep time.Time
}

type keyEffects struct {
	opCounts
	running int       // executions in progress
	last    time.Time // latest start or end of an execution
}

type opCounts struct {
	Charges int64 `json:"charges"`
	Refunds int64 `json:"refunds"`
	// Updates and Cancels count executions on an existing charge (PATCH,
	// cancel: updates.go).
	Updates int64 `json:"updates"`
	Cancels int64 `json:"cancels"`
}

// of is op's counter.
func (o *opCounts) of(op string) *int64 {
	switch op {
	case opCharges:
		return &o.Charges
	case opUpdates:
		return &o.Updates
	case opCancels:
		return &o.Cancels
	}
	return &o.Refunds
}

func (o *opCounts) sub(op string) { *o.of(op)-- }

func (o *opCounts) add(op string) { *o.of(op)++ }

// retainSlack keeps a count past its record's lifetime for probes that
// read it a while after the execution (a chaos driver, a load oracle).
const retainSlack = time.Minute

// sweepEvery bounds how often record() scans for forgettable keys.
const sweepEvery = time.Second

func newEffects(ttl, lease time.Duration) *effects {
	return &effects{perKey: map[string]*keyEffects{}, retain: ttl + lease + retainSlack, now: time.Now}
}

// record counts an execution of op under key; the returned func marks its
// end (the record, if any, is completed or released by then).
func (e *effects) record(key, op string) (done func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total.add(op)
	if key == "" {
		return func() {}
	}
	now := e.now()
	e.sweep(now)
	c, ok := e.perKey[key]
	if !ok {
		c = &keyEffects{}
		e.perKey[key] = c
	}
	c.add(op)
	c.running++
	c.last = now
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		c.running--
		c.last = e.now()
	}
}

// undo takes back an execution of op under key whose effects the store
// rolled back (see App.ServeHTTP).
func (e *effects) undo(key, op string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total.sub(op)
	if c, ok := e.perKey[key]; ok {
		c.sub(op)
	}
}

// sweep forgets the keys past retention with nothing running; e.mu held.
func (e *effects) sweep(now time.Time) {
	if now.Sub(e.lastSweep) < sweepEvery {
		return
	}
	e.lastSweep = now
	for k, c := range e.perKey {
		if c.running == 0 && now.Sub(c.last) > e.retain {
			delete(e.perKey, k)
		}
	}
}

type effectsReport struct {
	Key         *string  `json:"key,omitempty"`
	Executions  int64    `json:"executions"`
	ByOperation opCounts `json:"by_operation"`
}

func (e *effects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rep effectsReport
	e.mu.Lock()
	if r.URL.Query().Has("key") {
		k := r.URL.Query().Get("key")
		rep.Key = &k
		if c, ok := e.perKey[k]; ok {
			rep.ByOperation = c.opCounts
		}
	} else {
		rep.ByOperation = e.total
	}
	e.mu.Unlock()
	rep.Executions = rep.ByOperation.Charges + rep.ByOperation.Refunds + rep.ByOperation.Updates + rep.ByOperation.Cancels
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(rep)
}
