package chaos

import (
	"fmt"
	"slices"
	"sort"
)

// Checker decides exactly-once per key from a history: the proxy's
// attempts plus, when a driver ran, the client's operations with their
// effects-oracle counts. Feed it lines (in any order), then call Report.
type Checker struct {
	keys     map[string]*keyState
	attempts int
	faults   map[string]int
}

type keyState struct {
	ids       []string // distinct created ids, first seen first
	okBodies  []string // distinct request digests that got a 2xx upstream
	statuses  []int    // upstream statuses, first 32
	errors5xx int      // upstream 5xx answers other than the proxy's own
	definite  int      // first upstream status that is a final answer (not 409/429/5xx)
	op        *Op
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
		case u.Status >= 500:
			s.errors5xx++
		}
		if s.definite == 0 && u.Status != 409 && u.Status != 429 && u.Status < 500 {
			s.definite = u.Status
		}
	}
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
	Violations []Violation    `json:"violations"`
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
	r := Report{Keys: len(c.keys), Attempts: c.attempts, Faults: c.faults, Outcomes: map[string]int{}, Violations: []Violation{}}
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
			if s.op.Outcome == ClientUnknown && len(s.ids) == 0 && s.op.Kind != KindTransient {
				r.Unresolved++
			}
		}
		r.Violations = append(r.Violations, s.check(k)...)
	}
	return r
}

func (s *keyState) check(key string) []Violation {
	var out []Violation
	v := func(rule, format string, args ...any) {
		viol := Violation{Key: key, Rule: rule, Detail: fmt.Sprintf(format, args...), IDs: s.ids, Statuses: s.statuses}
		if s.op != nil {
			viol.Kind, viol.Oracle = s.op.Kind, s.op.Oracle
		}
		out = append(out, viol)
	}
	if len(s.ids) > 1 {
		v(RuleDoubleExecution, "%d distinct created ids for one key", len(s.ids))
	}
	if len(s.okBodies) > 1 {
		v(RuleFingerprintIgnored, "%d different request bodies under one key all got 2xx (a changed body must be rejected, e.g. 422)", len(s.okBodies))
	}
	op := s.op
	if op == nil {
		return out
	}
	transient := op.Kind == KindTransient
	if op.Oracle != nil && !transient && *op.Oracle > 1 && len(s.ids) <= 1 {
		v(RuleDoubleExecution, "effects oracle counts %d executions", *op.Oracle)
	}
	if transient && op.Oracle != nil && *op.Oracle < s.errors5xx {
		v(RuleErrorReplayed, "%d upstream 5xx answers but only %d executions: a 5xx was replayed instead of re-executed", s.errors5xx, *op.Oracle)
	}
	switch op.Kind {
	case KindNormal, KindStorm:
		if len(s.ids) >= 1 && op.Outcome != ClientOK {
			v(RuleLost, "the upstream created %s but the client ended %s (status %d, %s)", s.ids[0], op.Outcome, op.Status, op.Error)
		} else if len(s.ids) == 1 && op.ID != s.ids[0] {
			v(RuleWrongAnswer, "client got id %q, committed id %q", op.ID, s.ids[0])
		}
	case KindBusiness:
		if op.Outcome != ClientUnknown && s.definite != 0 && op.Status != s.definite {
			v(RuleWrongAnswer, "client got status %d, the committed answer was %d", op.Status, s.definite)
		}
	}
	return out
}
