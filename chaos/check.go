package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/expiry"
)

// Checker decides exactly-once per key from a history: the proxy's
// attempts plus, when a driver ran, the client's operations with their
// effects-oracle counts. Feed it lines (in any order), then call Findings.
type Checker struct {
	// TTL is how long the target keeps a key (0: forever, or unknown).
	// With it, an execution that may have come after the key expired is
	// a legal fresh execution: shown in Findings.AfterTTL, not a violation.
	// Set it before feeding lines; a history's "run" line sets it when 0.
	TTL time.Duration
	// Margin is the profile's margin before the TTL: an attempt sent
	// within TTL − Margin of the key's first contact met its record,
	// however late it was answered (expiry.SentInside, the rule every face
	// shares). A history's "run" line sets it when 0.
	Margin time.Duration
	// ReplicaKills: the harness SIGKILLed replicas during the run, so an
	// upstream exchange that failed (connection refused or reset) may be
	// its doing, like a fault's. A history's "run" line sets it.
	ReplicaKills bool
	// StaleReplay: the profile lets a changed body under a used key get
	// the stored answer (stale_replay_on_mismatch: no fingerprint, as
	// Worldline and Qonto document): different bodies answered with one
	// created resource are then legal. A history's "run" line sets it.
	StaleReplay bool
	// Protocol is what the proxy carried (Run.Protocol), for the report.
	Protocol string
	keys     map[string]*keyState
	attempts int
	faults   map[string]int
}

type keyState struct {
	ids      []string // distinct created ids, first seen first
	okBodies []string // distinct request digests that got a 2xx upstream
	statuses []int    // upstream statuses, first 32
	// codes are a gRPC key's upstream codes (names), with statuses; the
	// rules classify by the status, the lines print the code.
	codes []string
	grpc  bool // the key's answers are gRPC calls' (codes known)
	// clientCodes are, by status, the distinct codes the client got with
	// it (gRPC): what an op's final status was sent as.
	clientCodes map[int][]string
	errors5xx   int // upstream 5xx answers other than the proxy's own
	// errBodies are the distinct body digests of those answers ("" when
	// the history has none): a replay repeats one answer, while answers
	// from two sources (the handler's error and a store outage's 503, say)
	// cannot be told apart without the oracle saying which ran.
	errBodies    []string
	definite     int    // first upstream status that is a final answer (not 409/429/5xx)
	definiteCode string // its gRPC code ("" over HTTP)
	op           *Op
	// Timing, for the TTL: the key's first contact (no record of it can
	// be older), the earliest send of an attempt that returned each id and
	// each 2xx body, and the latest attempt sent. Attempts are judged by
	// when they were sent (expiry.SentInside).
	first, lastSent  time.Time
	idSent, bodySent map[string]time.Time
	// committed is the earliest end of an attempt that got a 2xx with a
	// created id: the server had committed by then.
	committed time.Time
	// cut counts attempts whose answer the harness dropped, cut or made
	// up (by fault kind): no evidence against the server. served is the
	// latest-sent attempt whose answer came from the server unaltered,
	// final the latest-sent attempt of all.
	cut           map[string]int
	served, final *sent
}

// sent is what the checker keeps of an attempt to judge what the client
// ended with: when it was sent, and the answer the client got.
type sent struct {
	at      time.Time
	attempt int
	status  int    // the server's answer (0: none)
	code    string // its gRPC code ("" over HTTP, or unknown)
	cut     bool   // the harness dropped, cut or replaced the answer
}

// after reports whether a was sent after b (the attempt number breaks
// ties).
func (a *sent) after(b *sent) bool {
	return b == nil || a.at.After(b.at) || (a.at.Equal(b.at) && a.attempt > b.attempt)
}

// CutByHarness reports whether the client did not get the server's own
// answer to ev because a fault dropped, reset, truncated or replaced it.
func (ev *Event) CutByHarness() bool { return ev.Fault != "" && ev.Client != ClientOK }

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
	// An attempt reaches the server when the proxy forwards it (a delay
	// fault holds it): that is when it was sent, for the TTL and the
	// commit.
	at := ev.Time
	if len(ev.Upstream) > 0 {
		at = ev.Time.Add(time.Duration(ev.Upstream[0].SentNS))
	}
	for _, u := range ev.Upstream {
		if t := ev.Time.Add(time.Duration(u.SentNS)); t.After(s.lastSent) {
			s.lastSent = t
		}
	}
	if ev.Time.After(s.lastSent) {
		s.lastSent = ev.Time
	}
	a := &sent{at: at, attempt: ev.Attempt, status: ev.Status, code: ev.ClientCode(), cut: ev.CutByHarness()}
	fault := ev.Fault
	if !a.cut && c.ReplicaKills && ev.Client != ClientOK && len(ev.Upstream) > 0 && ev.Upstream[0].Error != "" {
		a.cut, fault = true, "replica killed"
	}
	if a.status == 0 && len(ev.Upstream) > 0 && ev.Upstream[0].Error == "" {
		a.status, a.code = ev.Upstream[0].Status, ev.Upstream[0].GRPCCode // a history without the client's status
	}
	if a.code != "" {
		s.grpc = true
		s.clientCodes = addCode(s.clientCodes, a.status, a.code)
	}
	if a.after(s.final) {
		s.final = a
	}
	if a.cut {
		if s.cut == nil {
			s.cut = map[string]int{}
		}
		s.cut[fault]++
	} else if a.after(s.served) {
		s.served = a
	}
	for _, u := range ev.Upstream {
		if u.Error != "" {
			continue
		}
		if len(s.statuses) < 32 {
			s.statuses = append(s.statuses, u.Status)
			if u.GRPCCode != "" {
				s.grpc = true
				s.codes = append(s.codes, u.GRPCCode)
			}
		}
		switch {
		case u.Status >= 200 && u.Status < 300:
			if u.ID != "" && !slices.Contains(s.ids, u.ID) {
				s.ids = append(s.ids, u.ID)
			}
			if !slices.Contains(s.okBodies, ev.RequestSHA256) {
				s.okBodies = append(s.okBodies, ev.RequestSHA256)
			}
			sentAt := ev.Time.Add(time.Duration(u.SentNS))
			s.idSent = earliest(s.idSent, u.ID, sentAt)
			s.bodySent = earliest(s.bodySent, ev.RequestSHA256, sentAt)
			if u.ID != "" && (s.committed.IsZero() || end.Before(s.committed)) {
				s.committed = end
			}
		case u.Status >= 500:
			s.errors5xx++
			if !slices.Contains(s.errBodies, u.SHA256) {
				s.errBodies = append(s.errBodies, u.SHA256)
			}
		}
		if s.definite == 0 && u.Status != 409 && u.Status != 429 && u.Status < 500 {
			s.definite, s.definiteCode = u.Status, u.GRPCCode
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

// KeyViolations judges one key on what was fed so far, by the rules
// Findings applies, and forgets it: a live view counts, per finished
// operation, only what the final check will count.
func (c *Checker) KeyViolations(key string) int {
	s := c.keys[key]
	if s == nil {
		return 0
	}
	delete(c.keys, key)
	viol, _, _ := s.check(key, c.TTL, c.Margin, c.StaleReplay)
	return len(viol)
}

// KeyViolation is one broken exactly-once property of one key, with evidence.
type KeyViolation struct {
	Key      string   `json:"key"`
	Rule     string   `json:"rule"`
	Detail   string   `json:"detail"`
	Kind     string   `json:"kind,omitempty"`
	IDs      []string `json:"ids,omitempty"`
	Statuses []int    `json:"upstream_statuses,omitempty"`
	// Codes are a gRPC key's upstream codes (names), one per status.
	Codes  []string `json:"upstream_codes,omitempty"`
	Oracle *int     `json:"oracle,omitempty"`
	// Reason, on a key not judged, says why (a NotJudged* constant).
	Reason string `json:"reason,omitempty"`
}

// Findings is the checker's verdict over a whole history.
type Findings struct {
	// Protocol is what the proxy carried: HTTP/1.1 or gRPC ("": a
	// history that does not say).
	Protocol string         `json:"protocol,omitempty"`
	Keys     int            `json:"keys"`
	Ops      int            `json:"ops"`
	Attempts int            `json:"attempts"`
	Faults   map[string]int `json:"faults"`
	Outcomes map[string]int `json:"outcomes"` // client outcomes of ops
	// FailsByKind splits the "fail" outcomes by op kind: the business
	// and transient kinds' are their variants' expected answers (402,
	// 503), the mutated kind's a changed body's rejection (422).
	FailsByKind map[string]int `json:"fails_by_kind"`
	Unresolved  int            `json:"unresolved"` // ops that ended without an answer and with no effect seen
	// Interrupted: ops the run's end cut short (SIGINT, --deadline);
	// nothing the client did not get to see is judged for them.
	Interrupted int            `json:"interrupted_ops"`
	Violations  []KeyViolation `json:"violations"`
	// TTL is the key lifetime the checker applied (0: none), Margin the
	// margin before it: attempts sent later than TTL − margin after a
	// key's first contact are not judged against its first record.
	TTL    time.Duration `json:"ttl_ns"`
	Margin time.Duration `json:"margin_ns"`
	// AfterTTL are keys executed again when their first record may have
	// expired: legal fresh executions, shown with the same evidence as a
	// violation but not counted as one.
	AfterTTL []KeyViolation `json:"after_ttl"`
	// Unjudged are keys whose evidence would be a violation but has an
	// explanation the history cannot rule out: 5xx answers from two
	// sources (the handler's error and a store outage's 503), or a client
	// that ended without the committed result because the harness
	// dropped or cut the answers. Shown, not counted.
	Unjudged []KeyViolation `json:"unjudged"`
	// Judged counts keys the rules could decide (with or without a
	// violation); NotJudged counts the others by reason (a key after its
	// TTL, the harness dropped every answer, ...). Every key is in one.
	Judged    int            `json:"judged_keys"`
	NotJudged map[string]int `json:"not_judged"`
	// Executed counts keys with evidence of an execution: a 2xx answer,
	// a created id or an oracle count.
	Executed int `json:"executed_keys"`
	// Exercised is false when the history has client operations and no
	// key shows an execution: nothing committed that could run twice, so
	// no violation proves nothing (a body the API refuses, a wrong path or
	// credentials). Histories of the proxy alone have no operations.
	Exercised bool `json:"exercised"`
}

// Reasons a key is not judged (Findings.NotJudged).
const (
	NotJudgedHarness     = "the harness dropped every answer"
	NotJudgedAfterCommit = "the harness dropped every answer after the commit"
	NotJudgedAfterTTL    = "executed again after its TTL may have run out"
	NotJudgedTwoSources  = "5xx answers with another explanation"
	NotJudgedInterrupted = "cut short by the run's end"
)

// MostlyUnjudged reports whether more keys were left unjudged than were
// judged: a clean report then says little.
func (r Findings) MostlyUnjudged() bool {
	n := 0
	for _, c := range r.NotJudged {
		n += c
	}
	return n > r.Judged
}

// KeyViolation rules.
const (
	RuleDoubleExecution    = "double-execution"    // more than one effect for one key
	RuleFingerprintIgnored = "fingerprint-ignored" // different bodies under one key both succeeded
	RuleWrongAnswer        = "wrong-answer"        // the client's final answer is not the committed result
	RuleLost               = "lost"                // committed, but the server answered its retries with something else
	RuleErrorReplayed      = "error-replayed"      // a 5xx was replayed instead of re-executed
	// The events rules (chaos/drive, with events: configured): each
	// executed key publishes exactly one event.
	RuleEventLost       = "event-lost"       // an executed key published no event
	RuleEventDuplicated = "event-duplicated" // a key published more events than it executed
)

// KeyOutcome is what a history shows of one key: the client's op (nil:
// none recorded) and the distinct created ids its upstream 2xx answers
// carried, first seen first.
type KeyOutcome struct {
	Key string
	Op  *Op
	IDs []string
}

// Outcomes lists every key fed so far, sorted.
func (c *Checker) Outcomes() []KeyOutcome {
	out := make([]KeyOutcome, 0, len(c.keys))
	for k, s := range c.keys {
		out = append(out, KeyOutcome{Key: k, Op: s.op, IDs: slices.Clone(s.ids)})
	}
	slices.SortFunc(out, func(a, b KeyOutcome) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Findings applies the rules to every key.
func (c *Checker) Report() Findings {
	r := Findings{Protocol: c.Protocol, Keys: len(c.keys), Attempts: c.attempts, Faults: c.faults, Outcomes: map[string]int{}, FailsByKind: map[string]int{}, Violations: []KeyViolation{},
		TTL: c.TTL, Margin: c.Margin, AfterTTL: []KeyViolation{}, Unjudged: []KeyViolation{}, NotJudged: map[string]int{}}
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
			if s.op.Outcome == ClientFail {
				r.FailsByKind[s.op.Kind]++
			}
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
		viol, legal, unjudged := s.check(k, c.TTL, c.Margin, c.StaleReplay)
		r.Violations = append(r.Violations, viol...)
		r.AfterTTL = append(r.AfterTTL, legal...)
		r.Unjudged = append(r.Unjudged, unjudged...)
		switch {
		case len(viol) > 0:
			r.Judged++
		case s.op != nil && s.op.Outcome == ClientInterrupted:
			r.NotJudged[NotJudgedInterrupted]++
		case len(unjudged) > 0:
			r.NotJudged[unjudged[0].Reason]++
		case len(legal) > 0:
			r.NotJudged[NotJudgedAfterTTL]++
		case s.served == nil && len(s.cut) > 0 && s.op != nil && s.op.Outcome != ClientOK:
			// Nothing the server said reached the client: only the
			// upstream's evidence was judged, and it showed nothing.
			r.NotJudged[NotJudgedHarness]++
		default:
			r.Judged++
		}
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

// live counts the entries of sent (ids or bodies) first produced by an
// attempt sent while the key's first record must have been alive: inside
// TTL − margin of the key's first contact (expiry.SentInside), however
// late it was answered. With no ttl every entry is live.
func (s *keyState) live(sent map[string]time.Time, all []string, ttl, margin time.Duration) int {
	n := 0
	for _, k := range all {
		if expiry.SentInside(s.first, sent[k], ttl, margin) {
			n++
		}
	}
	return n
}

// check applies the rules to one key: violations, and executions that a
// key expiry makes legal, and evidence with another explanation (both
// shown, not counted).
func (s *keyState) check(key string, ttl, margin time.Duration, stale bool) (out, legal, unjudged []KeyViolation) {
	v := func(list *[]KeyViolation, rule, format string, args ...any) *KeyViolation {
		viol := KeyViolation{Key: key, Rule: rule, Detail: fmt.Sprintf(format, args...), IDs: s.ids, Statuses: s.statuses, Codes: s.codes}
		if s.op != nil {
			viol.Kind, viol.Oracle = s.op.Kind, s.op.Oracle
		}
		*list = append(*list, viol)
		return &(*list)[len(*list)-1]
	}
	afterTTL := fmt.Sprintf(" sent past the key's TTL (%s) − margin (%s): the key may have expired, a legal fresh execution", ttl, margin)
	if n := s.live(s.idSent, s.ids, ttl, margin); n > 1 {
		v(&out, RuleDoubleExecution, "%d distinct created ids for one key", len(s.ids))
	} else if len(s.ids) > 1 {
		v(&legal, RuleDoubleExecution, "%d distinct created ids for one key, the later ones%s", len(s.ids), afterTTL)
	}
	if n := s.live(s.bodySent, s.okBodies, ttl, margin); n > 1 && stale && len(s.ids) <= 1 {
		v(&legal, RuleFingerprintIgnored, "%d different request %s under one key got %s with one created resource: the stored answer replayed, as the profile allows (stale_replay_on_mismatch)", len(s.okBodies), s.words().reqs, s.words().ok)
	} else if n > 1 {
		if s.grpc {
			v(&out, RuleFingerprintIgnored, "%d different request messages under one key all got OK (a changed message must be rejected, e.g. INVALID_ARGUMENT)", len(s.okBodies))
		} else {
			v(&out, RuleFingerprintIgnored, "%d different request bodies under one key all got 2xx (a changed body must be rejected, e.g. 422)", len(s.okBodies))
		}
	} else if len(s.okBodies) > 1 {
		v(&legal, RuleFingerprintIgnored, "%d different request %s under one key got %s, the later ones%s", len(s.okBodies), s.words().reqs, s.words().ok, afterTTL)
	}
	op := s.op
	if op == nil {
		return out, legal, unjudged
	}
	transient := op.Kind == KindTransient
	if op.Oracle != nil && !transient && *op.Oracle > 1 && len(s.ids) <= 1 {
		// The oracle does not say when; only a key whose attempts were all
		// sent inside TTL − margin proves the executions met its record.
		if !expiry.SentInside(s.first, s.lastSent, ttl, margin) {
			v(&legal, RuleDoubleExecution, "effects oracle counts %d executions, the last attempt%s", *op.Oracle, afterTTL)
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
		w := s.words()
		if len(s.errBodies) == 1 {
			v(&out, RuleErrorReplayed, "%d upstream %s answers, all with the same %s, but only %d executions: %s was replayed instead of re-executed", s.errors5xx, w.err5xx, w.errBody, *op.Oracle, w.anErr)
		} else {
			v(&unjudged, RuleErrorReplayed, "%d upstream %s answers with %d different %s but only %d executions: the uncounted ones may be replays or another source's (a store outage's %s)", s.errors5xx, w.err5xx, len(s.errBodies), w.errs, *op.Oracle, w.outage).Reason = NotJudgedTwoSources
		}
	}
	switch op.Kind {
	case KindNormal, KindStorm:
		if len(s.ids) >= 1 && op.Outcome != ClientOK {
			s.lost(op, v, &out, &unjudged)
		} else if len(s.ids) == 1 && op.ID != s.ids[0] {
			v(&out, RuleWrongAnswer, "client got id %q, committed id %q", op.ID, s.ids[0])
		}
	case KindBusiness:
		if op.Outcome != ClientUnknown && s.definite != 0 && op.Status != s.definite {
			if s.final != nil && s.final.cut {
				v(&unjudged, RuleWrongAnswer, "client got %s, the committed answer was %s, but the harness made up or cut the last answer (%s)", s.opAnswer(op), StatusText(s.definite, s.definiteCode), s.cutList()).Reason = NotJudgedHarness
			} else {
				v(&out, RuleWrongAnswer, "client got %s, the committed answer was %s", s.opAnswer(op), StatusText(s.definite, s.definiteCode))
			}
		}
	}
	return out, legal, unjudged
}

// lost judges a key the upstream committed (a created id) while the client
// ended without it. Only the server's own answers are evidence: the rule
// holds when the server answered non-success to an attempt sent after it
// had committed (the latest such answer the client got unaltered). When
// the harness dropped or cut every answer, or every one after the commit,
// the loss is the harness's doing: not judged.
func (s *keyState) lost(op *Op, v func(*[]KeyViolation, string, string, ...any) *KeyViolation, out, unjudged *[]KeyViolation) {
	srv := s.served
	switch {
	case srv == nil:
		v(unjudged, RuleLost, "not judged: the harness dropped every answer (%s); the upstream created %s, the client ended %s", s.cutList(), s.ids[0], op.Outcome).Reason = NotJudgedHarness
	case srv.at.Before(s.committed):
		v(unjudged, RuleLost, "not judged: the harness dropped every answer after the commit (%s); the server's last answer the client got (%s) was to an attempt sent before it; the upstream created %s, the client ended %s",
			s.cutList(), answer(srv.status, srv.code), s.ids[0], op.Outcome).Reason = NotJudgedAfterCommit
	case srv.status >= 200 && srv.status < 300:
		// The server answered 2xx after the commit and the client still
		// ended without it: the client's side, not the server's.
		v(unjudged, RuleLost, "not judged: the server answered %s to the attempt sent last, yet the client ended %s (%s); the harness cut %s",
			StatusText(srv.status, srv.code), op.Outcome, op.Error, s.cutList()).Reason = NotJudgedAfterCommit
	default:
		v(out, RuleLost, "the upstream created %s, then answered a retry sent after the commit with %s; the client ended %s (%s, %s)", s.ids[0], answer(srv.status, srv.code), op.Outcome, s.opAnswer(op), op.Error)
	}
}

// cutList is "drop-response×19, status×1": the attempts the harness cut.
func (s *keyState) cutList() string {
	if len(s.cut) == 0 {
		return "none cut"
	}
	kinds := make([]string, 0, len(s.cut))
	for k := range s.cut {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s×%d", k, s.cut[k])
	}
	return strings.Join(parts, ", ")
}
