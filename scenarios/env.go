package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/managed"
	"github.com/idemcheck/idemcheck/wire"
)

// Env is one case instance's view of the target: it sends requests, samples
// the oracle and keeps every exchange as evidence.
type Env struct {
	Target  *apispec.Target
	Profile *apispec.Profile
	// Op is the operation under test (the first one for cases that are not
	// per operation).
	Op   *apispec.Operation
	Case Case

	// carrier builds and sends every request of the case (the run's,
	// built once: wire.NewCarrier); timeout bounds each request, as the
	// run's http.Client does.
	carrier wire.Carrier
	timeout time.Duration
	// double is the run's downstream double (nil: none runs): it marks
	// requests and witnesses executions the oracle cannot count.
	double *evidence.Downstream
	// inproc, when set, is the handler behind BaseURL: same-key bursts
	// call it in-process (RunOptions.InProcess).
	inproc http.Handler
	// proc is the target process the harness started (target_cmd), nil
	// when it started none.
	proc *managed.Process
	// oracle counts executions (nil: no oracle configured); blind names
	// the operations it was found not to count, with the calibration's
	// finding (see oracleSees).
	oracle *counter
	blind  map[string]string
	// events reads the API's published events (nil: no events:
	// section); eventLines are what the case's verdict lists of them.
	events     *evidence.Events
	eventLines []string

	// keys is the run's key strategy (nil: a fresh UUID per key).
	keys *wire.Keys
	// ctx is the case's context; it bounds key fetches (NewKey has no
	// context argument: cases call it as they build requests). nil:
	// context.Background().
	ctx context.Context

	mu        sync.Mutex
	exchanges []wire.Exchange
	keyErr    error // the first key that could not be fetched
	// setupVia, when set, sends this Env's setups (an Env behind a fault
	// proxy: its outer one, straight to the target).
	setupVia *Env
	// noKey names the case's keyless requests for the downstream double
	// (noKeyScope).
	noKey string
	// sent are the keys the case sent, in order, with when each was
	// first sent (the downstream evidence is timed from it).
	sent []sentKey
	// unseen, when set, names an error answer whose execution the
	// evidence (created ids alone) cannot see: the case cannot pass.
	unseen string
	// keyed counts the keyed answers the case got, signals those that
	// were a profile signal its Proof does not take (provenVerdict).
	keyed   int
	signals []string

	// setups are the values each key's setup request answered
	// (bindSetup), made once per key and principal.
	setupMu sync.Mutex
	setups  map[string]wire.SetupValues
}

type sentKey struct {
	key   string
	first time.Time
}

// sentUnder notes that a request under key (a scope) is being sent.
func (e *Env) sentUnder(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.sent {
		if s.key == key {
			return
		}
	}
	e.sent = append(e.sent, sentKey{key: key, first: time.Now()})
}

// sentKeys lists what sentUnder noted.
func (e *Env) sentKeys() []sentKey {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]sentKey(nil), e.sent...)
}

// noKeyScope is what the case's keyless requests are marked and counted
// under when the downstream double counts them (Target.countsKeyless): a
// key of their own, never sent as a key.
func (e *Env) noKeyScope() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.noKey == "" {
		e.noKey = "no-key-" + uuid.NewString()
	}
	return e.noKey
}

// NewEnv is an Env outside a run (idemcheck init --probe): it sends op's
// requests through c, each bounded by t's timeout, and keeps every
// exchange, with no case, profile or oracle.
func NewEnv(t *apispec.Target, op *apispec.Operation, c wire.Carrier) *Env {
	return &Env{Target: t, Op: op, carrier: c, timeout: t.Timeout}
}

// Req describes one request of a case. Zero values mean "the normal call".
type Req struct {
	Label string
	// Key is the idempotency key, written in the target's syntax.
	Key string
	// SameAs, when set, is the key of an earlier request this one means
	// to repeat under another spelling of its key or key field
	// (scope/case-sensitive, syntax/max-length, syntax/cross-form): the
	// downstream double's token is SameAs's, so that the marker never
	// makes the two requests' bytes differ.
	SameAs string
	// NoKey sends no key header at all.
	NoKey bool
	// KeyLines, when set, are sent verbatim as key header lines (malformed
	// and repeated-header probes); Key is then ignored.
	KeyLines []string
	// Principal indexes Target.Principals; -1 sends no credentials.
	Principal int
	// Body replaces the operation's body (see Env.Body).
	Body json.RawMessage
	// Op replaces Env.Op (scope cases); Method and Path override further.
	Op     *apispec.Operation
	Method string
	Path   string
	// Base replaces Target.BaseURL: one of Target.Replicas.
	Base string
	// SetupOf, for an operation with a setup:, acts on the resource made
	// for that key instead of a fresh one (another key on the same
	// resource).
	SetupOf string
	// Query and Headers are set on the request (a mutation's); KeyName
	// spells the key field's name as given (wire.Request).
	Query   map[string]string
	Headers map[string]string
	KeyName string
	// FirstSent, when set, replaces an AEP-155 key's first_sent (the time
	// the key was first sent): the first_sent probes.
	FirstSent time.Time
	// carrier replaces the run's shared carrier (bursts use warmed ones).
	carrier wire.Carrier
}

// NewKey returns a fresh key, unique so nothing collides across runs: a
// UUID (or the profile's key_format), a --hash-keys hash, or one issued by
// the target's key_source. A failed fetch returns "" and makes the case
// inconclusive (keyError).
func (e *Env) NewKey() string {
	if e.keys == nil {
		if e.Profile == nil {
			return uuid.NewString()
		}
		return e.Profile.NewKey()
	}
	k, err := e.keys.Next(e.ctxOr(), e.record)
	if err != nil {
		e.mu.Lock()
		if e.keyErr == nil {
			e.keyErr = err
		}
		e.mu.Unlock()
	}
	return k
}

// ctxOr is the case's context, context.Background() outside a case.
func (e *Env) ctxOr() context.Context {
	if e.ctx == nil {
		return context.Background()
	}
	return e.ctx
}

// keyError is the first failed key fetch of the case, nil when none.
func (e *Env) keyError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keyErr
}

// record keeps x as evidence.
func (e *Env) record(x wire.Exchange) {
	e.mu.Lock()
	e.exchanges = append(e.exchanges, x)
	e.mu.Unlock()
}

// KeyValue writes key as the target sends it (Target.KeyValue).
func (e *Env) KeyValue(key string) string { return e.Target.KeyValue(key) }

// Body returns the operation's body with the merge patches applied in order.
func (e *Env) Body(patches ...json.RawMessage) json.RawMessage {
	return e.Target.Body(e.Op, patches...)
}

// Variant returns the body of a configured variant of the operation. When
// the downstream double makes the variant behave (its downstream:), the
// body is a copy Send recognises: the key it is sent under gets the
// variant's behaviour, even when the body equals the normal one.
func (e *Env) Variant(name string) (json.RawMessage, apispec.Variant, bool) {
	body, v, ok := e.Target.Variant(e.Op, name)
	if ok && v.Downstream != nil {
		body = e.double.VariantBody(body, name)
	}
	return body, v, ok
}

// Send performs one request and records it as evidence.
func (e *Env) Send(ctx context.Context, r Req) wire.Resp {
	x := e.exchange(r)
	if c := e.oracle; c != nil && c.global {
		c.enter(ctx, e, scopeOf(r))
		defer c.leave()
	}
	c := e.carrier
	if r.carrier != nil {
		c = r.carrier
	}
	resp := e.doWith(ctx, c, x, true)
	op, body := e.Op, r.Body
	if r.Op != nil {
		op = r.Op
	}
	if body == nil {
		body = op.Body
	}
	resp.Work = e.workOf(op, body)
	e.proveBy(r, resp)
	e.noteAnswer(r, resp)
	return resp
}

// workOf is the least time the server spends executing body on op: the
// slow variant's declared duration when body is that variant's (by bytes,
// or by identity where the variant's body equals the normal one and a
// downstream double slows it), else zero.
func (e *Env) workOf(op *apispec.Operation, body []byte) time.Duration {
	slow, v, ok := e.Target.Variant(op, apispec.VariantSlow)
	switch {
	case !ok:
		return 0
	case e.double.VariantOf(body) == apispec.VariantSlow:
		return v.Duration
	case !bytes.Equal(slow, op.Body) && bytes.Equal(slow, body):
		return v.Duration
	}
	return 0
}

// exchange builds the request r describes (the carrier's Build) and
// marks it for the downstream double.
func (e *Env) exchange(r Req) wire.Exchange {
	op := e.Op
	if r.Op != nil {
		op = r.Op
	}
	x := e.carrier.Build(op, wire.Request{Label: r.Label, Key: r.Key, NoKey: r.NoKey, KeyLines: r.KeyLines,
		Principal: r.Principal, Body: r.Body, Method: r.Method, Path: r.Path, Base: r.Base,
		Query: r.Query, Headers: r.Headers, KeyName: r.KeyName, FirstSent: r.FirstSent})
	e.bindSetup(op, r, &x)
	e.markForDouble(op, r, &x)
	return x
}

// proveBy keeps what resp, the answer to r, proves about the executions
// under r's key (counter.prove): a 2xx, or the business_error variant's
// declared status.
func (e *Env) proveBy(r Req, resp wire.Resp) {
	c := e.oracle
	if c == nil || r.NoKey || r.KeyLines != nil {
		return
	}
	op := e.Op
	if r.Op != nil {
		op = r.Op
	}
	body := r.Body
	if body == nil {
		body = op.Body
	}
	// A request sent as the same bytes as SameAs's carries SameAs's
	// marker token: a double counting tokens credits its execution there.
	key := r.Key
	if r.SameAs != "" && e.double.CountsScopes() {
		key = r.SameAs
	}
	switch {
	case resp.OK():
		c.prove(key, createdIDOf(op, resp), r.Principal)
	case declinedAsDeclared(op, body, resp) && !e.declinesUnseen():
		c.prove(key, "", r.Principal) // a business error is an execution, stored
	}
}

// declinesUnseen reports that the events are the only oracle and the API
// announces no decline (events.declines silent): a business error then
// executed without an event, and no count can show it.
func (e *Env) declinesUnseen() bool {
	return e.oracle != nil && e.oracle.ev.EventsOnly() && e.events != nil && e.events.Config().Declines != eventspec.DeclinesAnnounced
}

// declinesUnseenVerdict is the verdict of a case that counts a declined
// execution when declinesUnseen.
func (e *Env) declinesUnseenVerdict() Verdict {
	return e.Unverifiable("the events are the only oracle and a declined request publishes none (events.declines: silent): its execution cannot be counted; configure an oracle (sql:, a list or counter url, downstream:) or events.declines: announced")
}

// declinedAsDeclared reports that resp answers op's business_error variant
// (body) with the status the variant declares: the catalog takes that
// outcome as one execution (errors/business-error-kept).
func declinedAsDeclared(op *apispec.Operation, body []byte, resp wire.Resp) bool {
	vb, v, ok := op.VariantBody(apispec.VariantBusinessError)
	return ok && v.Status != 0 && resp.HasStatus(v.Status) && bytes.Equal(vb, body)
}

// do sends x.Request, fills in the response and, if record, keeps x as
// evidence.
func (e *Env) do(ctx context.Context, x wire.Exchange, record bool) wire.Resp {
	return e.doWith(ctx, e.carrier, x, record)
}

func (e *Env) doWith(ctx context.Context, c wire.Carrier, x wire.Exchange, record bool) wire.Resp {
	resp, x := c.Do(ctx, x)
	if record {
		e.record(x.Redacted(e.Target))
	}
	return resp
}

// lostConn is an Inconclusive verdict when one of rs failed with
// wire.Resp.NotReached (the request may never have reached the server),
// else nil.
// Cases call it before judging a transport error or a missing answer as
// behaviour, unless their evidence (oracle count, created ids) decides.
func (e *Env) lostConn(rs ...wire.Resp) *Verdict {
	for _, r := range rs {
		if r.NotReached() {
			v := e.Inconclusive(r.Err.Error())
			return &v
		}
	}
	return nil
}

// warm returns a carrier holding up to n open connections to the target
// (spread over bases when given, e.g. the replicas), so that a
// barrier-released burst is not serialised by dialing (trap C13), and
// what closes it once the burst is done. A carrier that cannot warm
// (wire.Warmer) is the run's own, left open.
func (e *Env) warm(ctx context.Context, n int, bases ...string) (wire.Carrier, func()) {
	w, ok := e.carrier.(wire.Warmer)
	if !ok {
		return e.carrier, func() {}
	}
	c := w.Warm(ctx, n, bases...)
	return c, c.Close
}

// Exchanges returns the evidence recorded so far.
func (e *Env) Exchanges() []wire.Exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wire.Exchange(nil), e.exchanges...)
}
