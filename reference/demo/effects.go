package demo

import (
	"encoding/json"
	"net/http"
	"sync"
)

// effects counts handler executions per idempotency key and operation: the
// oracle the conformance suite reads to tell a replay from a re-execution.
type effects struct {
	mu     sync.Mutex
	perKey map[string]*opCounts
	total  opCounts
}

type opCounts struct {
	Charges int64 `json:"charges"`
	Refunds int64 `json:"refunds"`
}

func (o *opCounts) add(op string) {
	if op == opCharges {
		o.Charges++
	} else {
		o.Refunds++
	}
}

func newEffects() *effects { return &effects{perKey: map[string]*opCounts{}} }

func (e *effects) record(key, op string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total.add(op)
	if key == "" {
		return
	}
	c, ok := e.perKey[key]
	if !ok {
		c = &opCounts{}
		e.perKey[key] = c
	}
	c.add(op)
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
			rep.ByOperation = *c
		}
	} else {
		rep.ByOperation = e.total
	}
	e.mu.Unlock()
	rep.Executions = rep.ByOperation.Charges + rep.ByOperation.Refunds
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(rep)
}
