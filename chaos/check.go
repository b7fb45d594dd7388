package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Checker decides exactly-once per key from a history: the proxy's
// attempts plus, when a driver ran, the client's operations with their
// effects-oracle counts. Feed it lines (in any order), then call Report.
type Checker struct {
	// TTL is how long the target keeps a key (0: forever, or unknown).
	// With it, an execution that may have come after the key expired is
	// a legal fresh execution: shown in Report.AfterTTL, not a violation.
	// Set it before feeding lines; a history's "run" line sets it when 0.
	TTL      time.Duration
	keys     map[string]*keyState
	attempts int
	faults   map[string]int
}

type keyState struct {
	ids       []string // distinct created ids, first seen first
	okBodies  []string // distinct request digests that got a 2xx upstream
	statuses  []int    // upstream statuses, first 32
	errors5xx int      // upstream 5xx answers other than the proxy's own
	// errBodies are the distinct body digests of those answers ("" when
	// the history has none): a replay repeats one answer, while answers
	// from two sources (the handler's error and a store outage's 503, say)
	// cannot be told apart without the oracle saying which ran.
	errBodies []string
	definite  int // first upstream status that is a final answer (not 409/429/5xx)
	op        *Op
	// Timing, for the TTL: the key's first contact (no record of it can
	// be older), the earliest end of an attempt that returned each id and
	// each 2xx body (it was executed by then), and the last attempt end.
	first, last    time.Time
	idEnd, bodyEnd map[string]time.Time
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{keys: map[string]*keyState{}, faults: map[string]int{}}
}

func (c *Checker) key(k string) *keyState {
	s := c.keys[k]
	if s == nil {
		s = &keyState{}
		c.keys[k] = s
	}
	return s
}

// Attempt adds one proxy-side attempt.
func (c *Checker) Attempt(ev Event) {
	c.attempts++
	if ev.Fault != "" {
		c.faults[ev.Fault]++
	}
	if ev.Key == "" {
		return
	}
	s := c.key(ev.Key)
	end := ev.Time.Add(time.Duration(ev.DurationNS))
	if s.first.IsZero() || ev.Time.Before(s.first) {
		s.first = ev.Time
	}
	if end.After(s.last) {
		s.last = end
	}
	for _, u := range ev.Upstream {
		if u.Error != "" {
			continue
		}
		if len(s.statuses) < 32 {
			s.statuses = append(s.statuses, u.Status)
		}
		switch {
		case u.Status >= 200 && u.Status < 300:
			if u.ID != "" && !slices.Contains(s.ids, u.ID) {
				s.ids = append(s.ids, u.ID)
			}
			if !slices.Contains(s.okBodies, ev.RequestSHA256) {
				s.okBodies = append(s.okBodies, ev.RequestSHA256)
			}
			s.idEnd = earliest(s.idEnd, u.ID, end)
			s.bodyEnd = earliest(s.bodyEnd, ev.RequestSHA256, end)
		case u.Status >= 500:
			s.errors5xx++
			if !slices.Contains(s.errBodies, u.SHA256) {
				s.errBodies = append(s.errBodies, u.SHA256)
			}
		}
		if s.definite == 0 && u.Status != 409 && u.Status != 429 && u.Status < 500 {
			s.definite = u.Status
		}
	}
}

// earliest records t for k in m unless m holds an earlier time.
func earliest(m map[string]time.Time, k string, t time.Time) map[string]time.Time {
	if m == nil {
		m = map[string]time.Time{}
	}
	if old, ok := m[k]; !ok || t.Before(old) {
		m[k] = t
	}
	return m
}

// Op adds the client's record of a logical operation.
func (c *Checker) Op(op Op) {
	s := c.key(op.Key)
	s.op = &op
	if op.Outcome == ClientOK && op.ID != "" && !slices.Contains(s.ids, op.ID) {
		s.ids = append(s.ids, op.ID)
	}
}

// Violation is one broken exactly-once property of one key, with evidence.
type Violation struct {
	Key      string   `json:"key"`
	Rule     string   `json:"rule"`
	Detail   string   `json:"detail"`
	Kind     string   `json:"kind,omitempty"`
	IDs      []string `json:"ids,omitempty"`
	Statuses []int    `json:"upstream_statuses,omitempty"`
	Oracle   *int     `json:"oracle,omitempty"`
}

// Report is the checker's verdict over a whole history.
type Report struct {
	Keys       int            `json:"keys"`
	Ops        int            `json:"ops"`
	Attempts   int            `json:"attempts"`
	Faults     map[string]int `json:"faults"`
	Outcomes   map[string]int `json:"outcomes"`   // client outcomes of ops
	Unresolved int            `json:"unresolved"` // ops that ended without an answer and with no effect seen
	// Interrupted: ops the run's end cut short (SIGINT, --deadline);
	// nothing the client did not get to see is judged for them.
	Interrupted int         `json:"interrupted_ops"`
	Violations  []Violation `json:"violations"`
	// TTL is the key lifetime the checker applied (0: none).
	TTL time.Duration `json:"ttl_ns"`
	// AfterTTL are keys executed again when their first record may have
	// expired: legal fresh executions, shown with the same evidence as a
	// violation but not counted as one.
	AfterTTL []Violation `json:"after_ttl"`
	// Unjudged are keys whose evidence would be a violation but has an
	// explanation the history cannot rule out (5xx answers from two
	// sources, e.g. the handler's error and a store outage's 503): shown,
	// not counted.
	Unjudged []Violation `json:"unjudged"`
	// Executed counts keys with evidence of an execution: a 2xx answer,
	// a created id or an oracle count.
	Executed int `json:"executed_keys"`
	// Exercised is false when the history has client operations and no
	// key shows an execution: nothing committed that could run twice, so
	// no violation proves nothing (a body the API refuses, a wrong path or
	// credentials). Histories of the proxy alone have no operations.
	Exercised bool `json:"exercised"`
}

// Violation rules.
const (
	RuleDoubleExecution    = "double-execution"    // more than one effect for one key
	RuleFingerprintIgnored = "fingerprint-ignored" // different bodies under one key both succeeded
	RuleWrongAnswer        = "wrong-answer"        // the client's final answer is not the committed result
	RuleLost               = "lost"                // committed, but the client never learned it
	RuleErrorReplayed      = "error-replayed"      // a 5xx was replayed instead of re-executed
)

// Report applies the rules to every key.
func (c *Checker) Report() Report {
	r := Report{Keys: len(c.keys), Attempts: c.attempts, Faults: c.faults, Outcomes: map[string]int{}, Violations: []Violation{},
		TTL: c.TTL, AfterTTL: []Violation{}, Unjudged: []Violation{}}
	keys := make([]string, 0, len(c.keys))
	for k := range c.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.keys[k]
		if s.op != nil {
			r.Ops++
			r.Outcomes[s.op.Outcome]++
			switch {
			case s.op.Outcome == ClientInterrupted:
				r.Interrupted++
			case s.op.Outcome == ClientUnknown && len(s.ids) == 0 && s.op.Kind != KindTransient:
				r.Unresolved++
			}
		}
		if s.executed() {
			r.Executed++
		}
		viol, legal, unjudged := s.check(k, c.TTL)
		r.Violations = append(r.Violations, viol...)
		r.AfterTTL = append(r.AfterTTL, legal...)
		r.Unjudged = append(r.Unjudged, unjudged...)
	}
	r.Exercised = r.Ops == 0 || r.Executed > 0
	return r
}

// executed reports evidence that the key ran at least once.
func (s *keyState) executed() bool {
	if len(s.ids) > 0 {
		return true
	}
	return s.op != nil && (s.op.Outcome == ClientOK || (s.op.Oracle != nil && *s.op.Oracle > 0))
}

// live counts the entries of ends (ids or bodies) executed for certain
// while the key's first record was alive: no record of the key is older
// than its first contact, and none expires sooner than ttl after it. With
// no ttl every entry is live.
func (s *keyState) live(ends map[string]time.Time, all []string, ttl time.Duration) int {
	if ttl <= 0 {
		return len(all)
	}
	n := 0
	for _, k := range all {
		if ends[k].Before(s.first.Add(ttl)) {
			n++
		}
	}
	return n
}

// check applies the rules to one key: violations, and executions that a
// key expiry makes legal, and evidence with another explanation (both
// shown, not counted).
func (s *keyState) check(key string, ttl time.Duration) (out, legal, unjudged []Violation) {
	v := func(list *[]Violation, rule, format string, args ...any) {
		viol := Violation{Key: key, Rule: rule, Detail: fmt.Sprintf(format, args...), IDs: s.ids, Statuses: s.statuses}
		if s.op != nil {
			viol.Kind, viol.Oracle = s.op.Kind, s.op.Oracle
		}
		*list = append(*list, viol)
	}
	afterTTL := fmt.Sprintf(" after the key's TTL (%s) may have run out: a legal fresh execution", ttl)
	if n := s.live(s.idEnd, s.ids, ttl); n > 1 {
		v(&out, RuleDoubleExecution, "%d distinct created ids for one key", len(s.ids))
	} else if len(s.ids) > 1 {
		v(&legal, RuleDoubleExecution, "%d distinct created ids for one key, the later ones%s", len(s.ids), afterTTL)
	}
	if n := s.live(s.bodyEnd, s.okBodies, ttl); n > 1 {
		v(&out, RuleFingerprintIgnored, "%d different request bodies under one key all got 2xx (a changed body must be rejected, e.g. 422)", len(s.okBodies))
	} else if len(s.okBodies) > 1 {
		v(&legal, RuleFingerprintIgnored, "%d different request bodies under one key got 2xx, the later ones%s", len(s.okBodies), afterTTL)
	}
	op := s.op
	if op == nil {
		return out, legal, unjudged
	}
	transient := op.Kind == KindTransient
	if op.Oracle != nil && !transient && *op.Oracle > 1 && len(s.ids) <= 1 {
		// The oracle does not say when; only a key whose attempts all fit
		// in its TTL proves the executions overlapped its first record.
		if ttl > 0 && !s.last.Before(s.first.Add(ttl)) {
			v(&legal, RuleDoubleExecution, "effects oracle counts %d executions, attempts spanning %s%s", *op.Oracle, s.last.Sub(s.first).Round(time.Millisecond), afterTTL)
		} else {
			v(&out, RuleDoubleExecution, "effects oracle counts %d executions", *op.Oracle)
		}
	}
	if op.Outcome == ClientInterrupted {
		// Cut short: the client never got to its answer, so what it
		// learnt is not judged; the upstream's evidence above still is.
		return out, legal, unjudged
	}
	// A replayed 5xx needs an execution that produced it, and repeats its
	// bytes: with no execution, or with 5xx answers of different bodies
	// (a store outage's 503 beside the handler's error), the answers the
	// oracle does not count are not shown to be replays.
	if transient && op.Oracle != nil && *op.Oracle >= 1 && *op.Oracle < s.errors5xx {
		if len(s.errBodies) == 1 {
			v(&out, RuleErrorReplayed, "%d upstream 5xx answers, all with the same body, but only %d executions: a 5xx was replayed instead of re-executed", s.errors5xx, *op.Oracle)
		} else {
			v(&unjudged, RuleErrorReplayed, "%d upstream 5xx answers with %d different bodies but only %d executions: the uncounted ones may be replays or another source's (a store outage's 503)", s.errors5xx, len(s.errBodies), *op.Oracle)
		}
	}
	switch op.Kind {
	case KindNormal, KindStorm:
		if len(s.ids) >= 1 && op.Outcome != ClientOK {
			v(&out, RuleLost, "the upstream created %s but the client ended %s (status %d, %s)", s.ids[0], op.Outcome, op.Status, op.Error)
		} else if len(s.ids) == 1 && op.ID != s.ids[0] {
			v(&out, RuleWrongAnswer, "client got id %q, committed id %q", op.ID, s.ids[0])
		}
	case KindBusiness:
		if op.Outcome != ClientUnknown && s.definite != 0 && op.Status != s.definite {
			v(&out, RuleWrongAnswer, "client got status %d, the committed answer was %d", op.Status, s.definite)
		}
	}
	return out, legal, unjudged
}
