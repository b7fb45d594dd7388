package reference

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

const headerKey = "Idempotency-Key"

// Middleware protects mutating requests (POST, PUT, PATCH, DELETE) with
// idempotency records kept in store. Other methods pass straight through.
// Unknown defects panic, like regexp.MustCompile: validate user input with
// ParseDefects first.
func Middleware(store Store, opts ...Option) func(http.Handler) http.Handler {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	for d := range c.defects {
		if _, ok := LookupDefect(string(d)); !ok {
			panic(fmt.Sprintf("reference: unknown defect %q", d))
		}
	}
	if c.ttl <= 0 || c.lease <= 0 || c.maxBody <= 0 {
		panic("reference: TTL, lease and max body must be positive")
	}
	atomic, _ := store.(Atomic)
	local, _ := store.(Local)
	events, _ := store.(EventStore)
	probs := newProblems(c.docsURL)
	return func(next http.Handler) http.Handler {
		return &middleware{config: c, store: store, atomic: atomic, local: local, events: events, next: next, problems: probs, poisoned: newPoisonCache(), wedged: newPoisonCache(), completed: newPoisonCache(), unfinished: newUnfinished(), localLocks: newLocalLocks(), expired: newExpiredRows()}
	}
}

type middleware struct {
	config
	store    Store
	atomic   Atomic
	local    Local      // set when Lookup is an in-process read
	events   EventStore // set when the store keeps an outbox
	next     http.Handler
	problems *problems
	poisoned *poisonCache // store-conflicts defect only
	wedged   *poisonCache // failure-wedges-key defect and WithFailedKeyLocked
	// completed: scopes whose outcome was stored (expired-reclaim-unlocked
	// defect only), so a later claim of one is a reclaim.
	completed *poisonCache
	// unfinished: outcomes to store before their scope is claimed again.
	unfinished *unfinished
	localLocks *localLocks  // process-local-lock defect only
	expired    *expiredRows // expired-row-blocks-claim defect only
}

// requestState travels in the handler's context.
type requestState struct {
	key     string
	noStore bool
	outbox  bool    // Emit may queue events
	events  []Event // queued by Emit, stored with the outcome
}

type ctxKey struct{}

// KeyFromContext returns the idempotency key the middleware parsed for the
// request being handled (quotes removed).
func KeyFromContext(ctx context.Context) (string, bool) {
	st, ok := ctx.Value(ctxKey{}).(*requestState)
	if !ok {
		return "", false
	}
	return st.key, true
}

// DoNotStore tells the middleware not to store this request's outcome: use
// it for answers given before any effect (validation errors), so that a
// corrected request with the same key executes instead of meeting a 422.
func DoNotStore(r *http.Request) {
	if st, ok := r.Context().Value(ctxKey{}).(*requestState); ok {
		st.noStore = true
	}
}

func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !mutating(r.Method) {
		m.next.ServeHTTP(w, r)
		return
	}
	key, present, valid := m.key(r)
	if !present {
		// exact-key-spelling: the field is there, under a spelling the bug
		// does not look for; the request runs as a keyless one.
		misspelled := m.defects.has(ExactKeySpelling) && len(r.Header[headerKey]) > 0
		if m.keyOptional || m.defects.has(MissingKeyPassthrough) || misspelled {
			m.next.ServeHTTP(w, r)
			return
		}
		m.problems.write(w, probMissingKey)
		return
	}
	if !valid {
		m.problems.write(w, probInvalidKey)
		return
	}

	var early *lookup
	if m.defects.has(LookupBeforeBody) {
		rec, err := m.store.Lookup(r.Context(), m.scope(r, key))
		early = &lookup{rec, err}
	}

	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if r.ContentLength > m.maxBody {
		m.problems.write(w, probTooLarge)
		return
	}
	if err := readBody(buf, r.Body, r.ContentLength, m.maxBody); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			m.problems.write(w, probTooLarge)
		}
		return // the client went away mid-body: nothing to answer
	}
	if int64(buf.Len()) > m.maxBody {
		m.problems.write(w, probTooLarge)
		return
	}
	body := buf.Bytes()

	x := exchange{m: m, w: w, r: r, body: body, key: key}
	if !m.defects.has(NoFingerprint) {
		// The raw hash is cheap; the canonical fingerprint is computed
		// only when a claim or a differing retry needs it.
		sum := sha256.Sum256(body)
		hex.Encode(x.raw[:], sum[:])
		x.hashed = true
		x.request = requestHash(m.requestPart(r))
	}
	x.scope = m.scope(r, key)
	if m.defects.has(FailureWedgesKey) || m.failedKeyLocked {
		if _, ok := m.wedged.get(x.scope); ok {
			m.problems.write(w, probInFlight)
			return
		}
	}
	if m.defects.has(StoreConflicts) {
		if resp, ok := m.poisoned.get(x.scope); ok {
			m.replay(w, resp)
			return
		}
	}
	if early != nil {
		x.insertAfter(early.rec, early.err, 0)
		return
	}
	if m.defects.has(CheckThenInsert) {
		rec, err := m.store.Lookup(r.Context(), x.scope)
		x.insertAfter(rec, err, m.checkThenInsertGap)
		return
	}
	if m.defects.has(ProcessLocalLock) {
		x.processLocalLock()
		return
	}
	x.claim()
}

// scope is the record scope of r under key.
func (m *middleware) scope(r *http.Request, key string) Scope {
	s := Scope{Principal: m.principal(r), Method: r.Method, Path: r.URL.Path, Key: key}
	if m.defects.has(NoUserScope) {
		s.Principal = ""
	}
	if m.defects.has(NoEndpointScope) {
		s.Method, s.Path = "", ""
	}
	return s
}

// lookup is a Lookup's answer, kept by the lookup-before-body defect
// until the body is read.
type lookup struct {
	rec *Record
	err error
}

// key reads the Idempotency-Key field.
func (m *middleware) key(r *http.Request) (key string, present, valid bool) {
	lines := r.Header[headerKey]
	if m.defects.has(ExactKeySpelling) {
		lines = exactlySpelled(r, lines)
	}
	if m.defects.has(UnvalidatedKey) {
		k, ok := rawKey(lines)
		return k, ok, true
	}
	k, err := parseKey(lines, m.rawKeys)
	if errors.Is(err, errKeyMissing) {
		return "", false, false
	}
	return k, true, err == nil
}

// exactlySpelled is the exact-key-spelling defect's view of the key
// field: only the lines whose name was sent as Idempotency-Key. Where the
// spelling is unknown (an HTTP/1.1 server not wrapped by
// KeepFieldSpelling) every line counts.
func exactlySpelled(r *http.Request, lines []string) []string {
	names, ok := keyNames(r)
	if !ok || len(names) != len(lines) {
		return lines
	}
	var out []string
	for i, name := range names {
		if name == headerKey {
			out = append(out, lines[i])
		}
	}
	return out
}

func (m *middleware) ttlAndLease() (ttl, lease time.Duration) {
	ttl, lease = m.ttl, m.lease
	switch {
	case m.defects.has(NoExpiry):
		ttl = 100 * 365 * 24 * time.Hour
	case m.defects.has(EarlyExpiry):
		ttl /= 10
	}
	if m.defects.has(LeaseNeverExpires) {
		lease = ttl
	}
	if m.defects.has(LeaseAsMillis) {
		lease /= 1000
	}
	return ttl, lease
}

// readBody reads r into buf, up to limit+1 bytes (one more than allowed, so
// the caller can tell "too large"), growing buf once for a declared length.
func readBody(buf *bytes.Buffer, r io.Reader, declared, limit int64) error {
	if declared > 0 && declared <= limit {
		buf.Grow(int(declared) + 1)
	}
	for int64(buf.Len()) <= limit {
		if buf.Available() == 0 {
			buf.Grow(512)
		}
		room := buf.AvailableBuffer()
		room = room[:min(int64(cap(room)), limit+1-int64(buf.Len()))]
		n, err := r.Read(room)
		buf.Write(room[:n]) // appends in place: room is buf's own spare capacity
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// exchange is one keyed request on its way through the middleware.
type exchange struct {
	m      *middleware
	w      http.ResponseWriter
	r      *http.Request
	body   []byte
	key    string
	hashed bool                  // raw holds the body's hash (not under no-fingerprint)
	raw    [2 * sha256.Size]byte // hex SHA-256 of body as sent
	// request: hex SHA-256 of the query and fingerprinted headers (""
	// when the request has neither); part of both hashes a record keeps.
	request string
	fp      string // canonical fingerprint, once fpDone
	fpDone  bool
	scope   Scope
	// lateClaim: the handler runs unowned and the outcome is claimed and
	// stored after it (expired-reclaim-unlocked defect only).
	lateClaim bool
}

// rawHash is the hex SHA-256 of the body as stored in a record, joined
// with the request hash ("" under the no-fingerprint defect).
func (x *exchange) rawHash() string {
	if !x.hashed {
		return ""
	}
	return withRequest(string(x.raw[:]), x.request)
}

// fingerprint is the canonical fingerprint, computed on first use ("" under
// the no-fingerprint defect).
func (x *exchange) fingerprint() string {
	if !x.fpDone {
		x.fpDone = true
		if x.hashed {
			x.fp = withRequest(fingerprint(x.body, x.m.ignore), x.request)
		}
	}
	return x.fp
}

// sameRaw reports a record claimed by a request with the same body bytes
// (and the same query and fingerprinted headers).
func (x *exchange) sameRaw(rec *Record) bool {
	return x.hashed && rec.RawHash != "" && equalsJoined(rec.RawHash, x.raw[:], x.request)
}

// samePayload reports whether rec was claimed by a request with the same
// payload: equal raw bytes (their canonical forms are then equal too, with
// any ignored fields), else equal canonical fingerprints.
func (x *exchange) samePayload(rec *Record) bool {
	return x.sameRaw(rec) || rec.Fingerprint == x.fingerprint()
}

// claim is the correct path: one atomic Claim decides who executes.
func (x *exchange) claim() {
	if !x.m.unfinished.finish(x.r.Context(), x.m, x.scope) {
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	if x.m.local != nil {
		// Replay fast path: a completed record claimed with the same bytes
		// is what Claim would return; anything else takes the full path.
		rec := x.m.local.Peek(x.scope)
		if rec != nil && rec.State == Completed && x.sameRaw(rec) {
			x.m.replay(x.w, rec.Response)
			return
		}
	}
	if x.m.defects.has(ExpiredRowBlocksClaim) && x.m.expired.unpurged(x.scope) {
		// The bug: the insert failed on the expired row, the re-read
		// skipped it; the request runs unclaimed and stores nothing.
		x.execute("", false)
		return
	}
	ttl, lease := x.m.ttlAndLease()
	req := ClaimRequest{Scope: x.scope, Fingerprint: x.fingerprint(), RawHash: x.rawHash(), Lease: lease, TTL: ttl}
	deadline := time.Now().Add(lease)
	for {
		c, err := x.m.store.Claim(x.r.Context(), req)
		if err != nil {
			x.m.problems.write(x.w, probUnavailable)
			return
		}
		if c.Outcome == Claimed {
			if x.m.defects.has(ExpiredRowBlocksClaim) {
				x.m.expired.claimed(x.scope, time.Now().Add(ttl))
			}
			if _, ok := x.m.completed.get(x.scope); ok && x.m.defects.has(ExpiredReclaimUnlocked) {
				// The bug: the expired key's reclaim keeps no marker.
				_ = x.m.store.Release(context.WithoutCancel(x.r.Context()), x.scope, c.Token)
				x.lateClaim = true
				x.execute("", false)
				return
			}
			x.execute(c.Token, true)
			return
		}
		switch x.existing(c.Record) {
		case runUnowned:
			x.execute("", false)
			return
		case wait:
			// block-inflight defect: poll until the owner finishes.
			if time.Now().After(deadline) || sleepCtx(x.r.Context(), 20*time.Millisecond) != nil {
				x.m.problems.write(x.w, probInFlight)
				return
			}
			continue
		}
		return
	}
}

// insertAfter is the end of the check-then-insert defects: rec and err
// are the scope's lookup; after the work a real service does between its
// SELECT and its INSERT (gap), an insert that wins whether or not someone
// else got there first.
func (x *exchange) insertAfter(rec *Record, err error, gap time.Duration) {
	if err != nil {
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	if rec != nil {
		if x.existing(rec) == runUnowned {
			x.execute("", false)
		}
		return
	}
	if gap > 0 && sleepCtx(x.r.Context(), gap) != nil {
		return
	}
	ttl, lease := x.m.ttlAndLease()
	c, err := x.m.store.Claim(x.r.Context(), ClaimRequest{Scope: x.scope, Fingerprint: x.fingerprint(), RawHash: x.rawHash(), Lease: lease, TTL: ttl})
	if err != nil {
		x.m.problems.write(x.w, probUnavailable)
		return
	}
	x.execute(c.Token, c.Outcome == Claimed)
}

type verdict int

const (
	answered   verdict = iota // a replay or an error was written
	runUnowned                // defects: run the handler without owning the record
	wait                      // block-inflight: poll again
)

// existing answers a request whose scope already holds a live record. The
// fingerprint is checked first, so a changed body is a 422 even while the
// original is still in flight.
func (x *exchange) existing(rec *Record) verdict {
	if !x.samePayload(rec) {
		k := probMismatch
		if x.m.defects.has(MismatchAs409) {
			k = probMismatch409
		}
		if x.m.defects.has(ConflictLeaksStored) && rec.State == Completed {
			x.leakConflict(k, rec)
			return answered
		}
		x.conflict(k, rec)
		return answered
	}
	if rec.State == InFlight {
		switch {
		case x.m.defects.has(NoInflightLock):
			return runUnowned
		case x.m.defects.has(BlockInflight):
			return wait
		}
		if x.m.defects.has(ConflictAs500) {
			x.m.problems.write(x.w, probPanic)
			return answered
		}
		x.conflict(probInFlight, rec)
		return answered
	}
	x.m.replay(x.w, rec.Response)
	return answered
}

func (x *exchange) conflict(k problemKind, rec *Record) {
	if x.m.defects.has(StoreConflicts) {
		x.m.poisoned.put(x.scope, Response{
			Status: problemSpecs[k].status,
			Header: http.Header{"Content-Type": hvProblemJSON},
			Body:   x.m.problems[k],
		}, rec.ExpiresAt)
	}
	x.m.problems.write(x.w, k)
}

// execute runs the handler. When owned, the outcome is stored (2xx, 4xx)
// or the claim released (5xx, panic, DoNotStore) before the client sees it,
// so a retry after the response always finds the record.
func (x *exchange) execute(token string, owned bool) {
	m := x.m
	st := &requestState{key: x.key, outbox: m.events != nil}
	ctx := context.WithValue(x.r.Context(), ctxKey{}, st)
	// Completion must survive a client that hangs up after the handler ran.
	bg := context.WithoutCancel(x.r.Context())
	if m.defects.has(CancelledResultWrite) {
		// The handler's work does not watch the client; the bug is below.
		ctx = context.WithoutCancel(ctx)
	}
	var unit Unit
	if owned && m.atomic != nil {
		var err error
		unit, ctx, err = m.atomic.Begin(ctx, x.scope, token)
		if err != nil {
			_ = m.store.Release(bg, x.scope, token)
			m.problems.write(x.w, probUnavailable)
			return
		}
	}
	r := x.r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(x.body))
	r.ContentLength = int64(len(x.body))

	rec := &recorder{header: make(http.Header)}
	panicked := runHandler(m.next, rec, r)
	if (m.defects.has(FailureWedgesKey) || m.failedKeyLocked) && (panicked || rec.statusCode() == http.StatusGatewayTimeout) {
		// The bug: the failure path forgets the record, left in flight.
		// WithFailedKeyLocked does it on purpose, until the key expires.
		ttl, _ := m.ttlAndLease()
		until := time.Now().Add(100 * ttl)
		if m.failedKeyLocked && !m.defects.has(FailureWedgesKey) {
			until = time.Now().Add(ttl)
		}
		m.wedged.put(x.scope, Response{}, until)
		if unit != nil {
			_ = unit.Rollback(bg)
		}
		if panicked {
			m.problems.write(x.w, probPanic)
			return
		}
		rec.flush(x.w)
		return
	}
	if panicked {
		if unit != nil {
			_ = unit.Rollback(bg)
		}
		if owned {
			_ = m.store.Release(bg, x.scope, token)
		}
		m.problems.write(x.w, probPanic)
		return
	}
	if m.defects.has(ReplayCodedBody) && acceptsGzip(x.r) && codable(rec.header, rec.statusCode()) && rec.body.Len() > 0 {
		// The bug: the response is coded inside, for this request's
		// Accept-Encoding, and stored coded with its Content-Encoding.
		coded := gzipBody(rec.body.Bytes())
		rec.body.Reset()
		rec.body.Write(coded)
		rec.header.Set("Content-Encoding", "gzip")
		rec.header.Add("Vary", "Accept-Encoding")
	}
	status := rec.statusCode()
	if owned {
		if m.keeps(status) && !st.noStore {
			resp := m.outcome(status, rec)
			if unit != nil {
				if eu, ok := unit.(EventUnit); ok && len(st.events) > 0 {
					eu.AddEvents(st.events)
				}
				commit := bg
				if m.defects.has(CancelledResultWrite) {
					commit = x.r.Context() // the bug (no harm here: the effects roll back too)
				}
				if err := unit.Commit(commit, resp); err != nil {
					// The effects were rolled back with the record: a retry is safe.
					_ = m.store.Release(bg, x.scope, token)
					m.problems.write(x.w, probUnavailable)
					return
				}
			} else if m.defects.has(CancelledResultWrite) && x.r.Context().Err() != nil {
				// The bug: the write ran under the request's context, which
				// the hang-up cancelled, and its failure path releases the
				// claim; the effect stays.
				m.appendEvents(bg, st.events)
				_ = m.store.Release(bg, x.scope, token)
				return
			} else {
				if m.defects.has(ReleaseBeforeStore) {
					token = m.releaseThenClaim(bg, x, token)
				}
				// An error here (lease lost, store down) cannot undo the
				// effect; the client still gets the real outcome, and a
				// store that was down gets it before the scope's next claim.
				err := m.complete(bg, x.scope, token, resp, st.events)
				switch {
				case errors.Is(err, ErrNotOwner):
					m.appendEvents(bg, st.events)
				case err != nil:
					ttl, _ := m.ttlAndLease()
					m.unfinished.put(x.scope, token, resp, st.events, time.Now().Add(ttl))
				}
			}
			m.markCompleted(x.scope)
		} else {
			if unit != nil {
				_ = unit.Rollback(bg)
			} else {
				m.appendEvents(bg, st.events) // effects outside a unit stay
			}
			_ = m.store.Release(bg, x.scope, token)
		}
	} else if x.lateClaim && m.keeps(status) && !st.noStore {
		ttl, lease := m.ttlAndLease()
		c, err := m.store.Claim(bg, ClaimRequest{Scope: x.scope, Fingerprint: x.fingerprint(), RawHash: x.rawHash(), Lease: lease, TTL: ttl})
		stored := false
		if err == nil && c.Outcome == Claimed {
			resp := m.outcome(status, rec)
			stored = m.complete(bg, x.scope, c.Token, resp, st.events) == nil
			m.markCompleted(x.scope)
		}
		if !stored {
			m.appendEvents(bg, st.events)
		}
	} else {
		m.appendEvents(bg, st.events) // an execution that owns no record
	}
	rec.flush(x.w)
}

// releaseGap is the release-before-store defect's time between releasing
// the claim and storing the response: a second round trip to a store.
const releaseGap = 5 * time.Millisecond

// releaseThenClaim is the release-before-store defect: the claim owned by
// token is released, and releaseGap later claimed again for the store;
// it returns the new claim's token ("" when a duplicate claimed the key
// in between: the response is then not stored).
func (m *middleware) releaseThenClaim(ctx context.Context, x *exchange, token string) string {
	_ = m.store.Release(ctx, x.scope, token)
	time.Sleep(releaseGap)
	ttl, lease := m.ttlAndLease()
	c, err := m.store.Claim(ctx, ClaimRequest{Scope: x.scope, Fingerprint: x.fingerprint(), RawHash: x.rawHash(), Lease: lease, TTL: ttl})
	if err != nil || c.Outcome != Claimed {
		return ""
	}
	return c.Token
}

// markCompleted remembers that scope's outcome was stored, under the
// expired-reclaim-unlocked defect.
func (m *middleware) markCompleted(scope Scope) {
	if m.defects.has(ExpiredReclaimUnlocked) {
		ttl, _ := m.ttlAndLease()
		m.completed.put(scope, Response{}, time.Now().Add(100*ttl))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
