package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// HasOracle reports whether executions can be counted by the probe.
func (e *Env) HasOracle() bool { return e.oracle != nil }

// Executions is how many times the handler ran for key, summed over the
// target's oracles (Target.Oracles: the per-operation ones, else the
// target's), so a key sent to two operations counts both.
//
// A per-key oracle is asked for key. A global counter (no "{key}" in its
// URL) counts every execution of the API: the Env then reads it before a
// key's first request and whenever the requests switch to another key, and
// credits the rise to the key whose requests were sent in between. That is
// exact as long as the case sends one key at a time (same-key requests may
// overlap, e.g. a burst) and nothing else moves the counter, which is why
// a run under a global counter is serial. A case that sends requests under
// two keys at once gets an error here instead of a miscount.
//
// key "" counts the requests sent without a key (Req.NoKey): exact under a
// global counter, an error under a per-key one. Requests sent as KeyLines
// are counted under KeyLinesScope(lines) under a global counter. An oracle
// error is the case's to report as inconclusive with its cause.
//
// A case that calls Executions, Effects or Replayed declares it: NeedOracle
// or NeedEffects in Needs, or Case.UsesOracle when the oracle is optional
// evidence (idemcheck list shows the oracle mode from that declaration).
func (e *Env) Executions(ctx context.Context, key string) (int, error) {
	return e.count(ctx, key, true)
}

// count is Executions; polling loops pass record=false so the evidence is
// not flooded with probe exchanges.
func (e *Env) count(ctx context.Context, key string, record bool) (int, error) {
	o := e.oracle
	if o == nil {
		return 0, errors.New("no oracle configured")
	}
	if record { // polling only times a start (startInFlight); not a count
		o.used.Store(true)
	}
	if !o.global {
		if key == "" && e.double.CountsKeyless(e.Op) {
			if !e.double.CountsScopes() { // the double witnesses what the oracle cannot count
				return e.double.Calls(e.noKeyScope(), ""), nil
			}
			key = e.noKeyScope() // the keyless requests' token (markForDouble)
		}
		read := func() (int, error) { return o.ev.Count(ctx, key, e.recorder(record)) }
		n, err := read()
		if err != nil || !record {
			return n, err
		}
		return o.settle(ctx, key, n, read)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.readLocked(ctx, e, record); err != nil {
		return 0, err
	}
	if !record {
		return o.counts[key], nil
	}
	// Rises are credited to the open scope: only its count can catch up
	// (enter let the previous scope's settle before it switched).
	var read func() (int, error)
	if !o.open || o.scope == key {
		read = func() (int, error) {
			err := o.readLocked(ctx, e, record)
			return o.counts[key], err
		}
	}
	return o.settle(ctx, key, o.counts[key], read)
}

// settle re-reads a count n of key's executions that is below what key's
// answers prove (a 2xx, or the business_error variant's declared status,
// under a fresh key is one execution at least; each distinct created id is
// one), with backoff, for up to LagSettle (nil
// read: it cannot be re-read). A count that never catches up is an error:
// the case is inconclusive, not judged on a count that contradicts its
// own answers.
func (c *counter) settle(ctx context.Context, key string, n int, read func() (int, error)) (int, error) {
	lower, why := c.proven(key)
	deadline := time.Now().Add(evidence.LagSettle)
	wait := 50 * time.Millisecond
	for n < lower {
		if read == nil || time.Now().Add(wait).After(deadline) || clock.Until(ctx, time.Now().Add(wait)) != nil {
			cause := "it lags (a read replica, an asynchronous counter) or misses executions"
			if who := c.unseen(key); who != "" {
				cause = who
			}
			return 0, fmt.Errorf("oracle: counts %d executions under this key, but its answers prove at least %d (%s); re-read for %s, the count never caught up: %s", n, lower, why, evidence.LagSettle, cause)
		}
		wait *= 2
		var err error
		if n, err = read(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// prove notes an answer under key that shows an execution, with the id it
// created ("" none).
func (c *counter) prove(key, id string, principal int) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.proofs[key] == nil {
		c.proofs[key] = map[string]bool{}
		c.provers[key] = map[int]bool{}
	}
	c.proofs[key][id] = true
	c.provers[key][principal] = true
}

// proven is the fewest executions key's answers prove, and why.
func (c *counter) proven(key string) (int, string) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	ids := c.proofs[key]
	n := len(ids)
	if ids[""] {
		n--
	}
	switch {
	case len(ids) == 0:
		return 0, ""
	case n <= 1:
		return 1, "an answer that shows an execution: a 2xx, or the business_error variant's status"
	}
	return n, fmt.Sprintf("%d distinct created ids", n)
}

// recorder keeps an oracle's probe exchanges as evidence (nil: not kept).
func (e *Env) recorder(record bool) func(wire.Exchange) {
	if !record {
		return nil
	}
	return e.record
}

// counter is a case instance's view of the run's evidence. Under a
// global counter it attributes the counter's rises to keys (Executions).
type counter struct {
	ev     *evidence.Evidence
	global bool
	used   atomic.Bool // the case asked for a count

	mu sync.Mutex
	// open: a key's requests were sent since the last reading (scope is
	// that key); inflight of them are still under way.
	open     bool
	scope    string
	inflight int
	last     int            // the global counter at the last reading
	counts   map[string]int // rises credited to each scope
	// broken, once set, is why no count can be trusted any more.
	broken error

	pmu    sync.Mutex
	proofs map[string]map[string]bool // created ids of 2xx answers by key ("": none)
	// provers are the principals whose answers proved key's executions.
	provers    map[string]map[int]bool
	principals []apispec.Principal // their names, for messages
}

func newCounter(ev *evidence.Evidence, t *apispec.Target) *counter {
	if ev == nil {
		return nil
	}
	return &counter{ev: ev, global: !ev.PerKey(), counts: map[string]int{}, proofs: map[string]map[string]bool{},
		provers: map[string]map[int]bool{}, principals: t.Principals}
}

// unseen says whose proved executions of key the oracle cannot see: the
// principals it does not read with ("" when it reads with them all, or
// reads a database that sees everyone's).
func (c *counter) unseen(key string) string {
	seen := c.ev.Sees().Principals
	if seen == nil {
		return ""
	}
	c.pmu.Lock()
	var blind []string
	for p := range c.provers[key] {
		if p >= 0 && !slices.Contains(seen, p) {
			blind = append(blind, c.principalName(p))
		}
	}
	c.pmu.Unlock()
	if len(blind) == 0 {
		return ""
	}
	sort.Strings(blind)
	var readers []string
	for _, p := range seen {
		readers = append(readers, c.principalName(p))
	}
	return fmt.Sprintf("it reads with the credentials of %s only, and the executions were proved by answers to %s, whose executions a view scoped to its own principal (a tenant's list) never shows: set oracle.per_principal: true to read with each principal's own credentials, counts summed",
		strings.Join(readers, ", "), strings.Join(blind, ", "))
}

func (c *counter) principalName(i int) string {
	if i < len(c.principals) {
		return fmt.Sprintf("principal %d (%s)", i, c.principals[i].Name)
	}
	return fmt.Sprintf("principal %d", i)
}

// readLocked reads the summed global counter and credits its rise since
// the last reading to the open scope.
func (c *counter) readLocked(ctx context.Context, e *Env, record bool) error {
	if c.broken != nil {
		return c.broken
	}
	total, err := c.ev.Count(ctx, "", e.recorder(record))
	if err != nil {
		// A read lost between two keys loses the attribution of
		// everything after it.
		c.broken = err
		return err
	}
	if c.open {
		if total < c.last {
			c.broken = fmt.Errorf("oracle: the global counter went down from %d to %d (the target restarted, or the counter is not a running total)", c.last, total)
			return c.broken
		}
		c.counts[c.scope] += total - c.last
	}
	c.last = total
	return nil
}

// enter is called before a request under scope is sent: a new scope first
// reads the counter, crediting the rise so far to the previous scope. A
// new scope while the previous one still has requests under way makes the
// attribution impossible, and every later count an error.
func (c *counter) enter(ctx context.Context, e *Env, scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open && c.scope == scope {
		c.inflight++
		return
	}
	if c.open && c.inflight > 0 && c.broken == nil {
		c.broken = fmt.Errorf("oracle: a global counter cannot tell which of two keys executed: requests under %q and %q were under way at once", c.scope, scope)
	}
	_ = c.readLocked(ctx, e, true) // an error is kept in c.broken for the counts
	c.settleOpenLocked(ctx, e)
	c.open, c.scope, c.inflight = true, scope, 1
}

// settleOpenLocked lets the open scope's count catch up with its answers
// (settle): a lagging global counter credits a late rise to whichever
// scope is open, so a scope is settled before the next one opens, and
// before the next case starts (drain).
func (c *counter) settleOpenLocked(ctx context.Context, e *Env) {
	if !c.open || c.broken != nil {
		return
	}
	scope := c.scope
	_, _ = c.settle(ctx, scope, c.counts[scope], func() (int, error) {
		err := c.readLocked(ctx, e, false)
		return c.counts[scope], err
	})
}

// drain settles a global counter's open scope when e is done with it, so
// that the next Env (the run is serial) starts from a settled count.
func (e *Env) drain(ctx context.Context) {
	if c := e.oracle; c != nil && c.global {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.settleOpenLocked(ctx, e)
	}
}

// leave is called when a request entered under scope has its answer.
func (c *counter) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
}

// KeyLinesScope is the scope under which a global counter counts requests
// sent with Req.KeyLines (Executions(ctx, KeyLinesScope(lines))).
func KeyLinesScope(lines []string) string { return "\x00lines:" + strings.Join(lines, "\n") }

// linesCount reads the count that requests sent with the key field lines
// move: under a global counter (or a downstream double that marks them
// with a token of their own) their own scope's, under a per-key oracle
// the executions under keys, the keys the server may read from the lines.
// Read before and after the requests, the difference is their executions.
func (e *Env) linesCount(ctx context.Context, lines []string, keys ...string) (int, error) {
	if e.oracle != nil && (e.oracle.global || e.double.CountsScopes()) {
		return e.Executions(ctx, KeyLinesScope(lines))
	}
	return e.executionsUnder(ctx, slices.Compact(slices.Sorted(slices.Values(keys)))...)
}

// scopeOf is the key a global counter credits r's executions to.
func scopeOf(r Req) string {
	switch {
	case r.KeyLines != nil:
		return KeyLinesScope(r.KeyLines)
	case r.NoKey:
		return ""
	}
	return r.Key
}

// CreatedID returns what tells r's execution from another's: the created
// resource id, or an update's version (apispec.Operation.ExecutionMark);
// "" if none or no pointer.
func (e *Env) CreatedID(r wire.Resp) string { return createdIDOf(e.Op, r) }

// createdIDOf is CreatedID for a response of operation op (scope cases
// compare responses of two operations). An update's resource id alone is
// never returned: every answer names the same resource, so equal ids are
// no evidence of a replay, a leak or an execution.
func createdIDOf(op *apispec.Operation, r wire.Resp) string {
	if !r.OK() {
		return ""
	}
	return op.ExecutionMark(r.Body)
}

// hasMarks reports that op's answers carry an execution mark: a create's
// id pointer, an update's version pointer.
func hasMarks(op *apispec.Operation) bool {
	if op.Updates() {
		return op.VersionPointer != ""
	}
	return op.IDPointer != ""
}

// Effects counts the executions caused under key. With an oracle the count
// is exact (see Executions); otherwise the distinct created ids among rs
// are a lower bound (identity oracle). ok is false when neither is
// available.
func (e *Env) Effects(ctx context.Context, key string, rs ...wire.Resp) (n int, how string, ok bool, err error) {
	if !e.sees().ErrorAnswers {
		e.blindTo(rs...)
	}
	if e.HasOracle() {
		n, err = e.Executions(ctx, key)
		return n, "oracle", err == nil, err
	}
	if !hasMarks(e.Op) {
		return 0, "", false, nil
	}
	return len(e.DistinctIDs(rs...)), "distinct " + marksName(e.Op), true, nil
}

// sees is what the case's evidence sees: the oracle's sources, else
// created ids.
func (e *Env) sees() evidence.Sight {
	if e.oracle != nil {
		return e.oracle.ev.Sees()
	}
	return evidence.Sight{} // distinct created ids see only the 2xx answers that reached the client
}

// blindTo notes the first of rs that answered an error (other than an
// in-flight conflict, which answers before any handler runs) when the
// evidence cannot see whether it executed (created ids): the case may then
// not pass (runInstance makes such a pass unverifiable).
func (e *Env) blindTo(rs ...wire.Resp) {
	for _, r := range rs {
		if r.Err != nil || r.Status < 400 || (e.Profile != nil && r.StatusIn(e.Profile.InFlightStatus)) {
			continue
		}
		e.mu.Lock()
		if e.unseen == "" {
			e.unseen = fmt.Sprintf("a %d answer", r.Status)
		}
		e.mu.Unlock()
		return
	}
}

// unseenVerdict turns a pass that rested on created ids while an error
// answer may have executed unseen into unverifiable; other verdicts stand
// (a fail or a warn has evidence of its own).
func (e *Env) unseenVerdict(v Verdict) Verdict {
	e.mu.Lock()
	unseen := e.unseen
	e.mu.Unlock()
	if v.Status != Pass || unseen == "" {
		return v
	}
	what := "created ids"
	if e.HasOracle() {
		what = "the oracle"
	}
	return e.Unverifiable(fmt.Sprintf("%s cannot see an execution that answered an error (%s): count executions with a source that does (sql:, a list or counter url, downstream:; docs/evidence.md); the case saw: %s", what, unseen, v.Observed))
}

// DistinctIDs lists the distinct created ids among rs, sorted.
func (e *Env) DistinctIDs(rs ...wire.Resp) []string {
	set := map[string]bool{}
	for _, r := range rs {
		if id := e.CreatedID(r); id != "" {
			set[id] = true
		}
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// marksName is what hasMarks' marks are called in a verdict.
func marksName(op *apispec.Operation) string {
	if op.Updates() {
		return "versions"
	}
	return "created ids"
}
