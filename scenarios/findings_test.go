package scenarios_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// Engine findings of issue 9, each pinned by a test that failed before its
// fix.

// TestUnmetByLevel: an unmet requirement is judged at its level. An unmet
// MAY or INFO is a finding (skip with what was seen): never a pass, and
// never a warn that --strict would turn into a failure.
func TestUnmetByLevel(t *testing.T) {
	for _, tc := range []struct {
		level scenarios.Level
		want  scenarios.Status
		why   string
	}{
		{scenarios.Must, scenarios.Fail, "a MUST unmet fails"},
		{scenarios.Should, scenarios.Warn, "a SHOULD unmet warns (fails under --strict)"},
		{scenarios.May, scenarios.Skip, "a MAY unmet is a finding: --strict must not fail on an optional behaviour"},
		{scenarios.Info, scenarios.Skip, "an INFO problem is a finding, not a pass"},
	} {
		e := &scenarios.Env{Case: scenarios.Case{Meta: scenarios.Meta{Level: tc.level}}}
		v := e.Unmet("x", "y")
		if v.Status != tc.want || v.Expected != "x" || v.Observed != "y" {
			t.Errorf("%s: Unmet = %+v, want status %s keeping expected/observed (%s)", tc.level, v, tc.want, tc.why)
		}
	}
}

// TestDocLink: the draft's "body or Link header pointing to relevant
// documentation" in the forms servers use.
func TestDocLink(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body, link string
		want                 bool
	}{
		{"problem+json type", "application/problem+json", `{"type":"https://docs.example/idem","title":"x"}`, "", true},
		{"problem+json relative type", "application/problem+json", `{"type":"/docs/idem"}`, "", true},
		{"Link describedby", "application/json", `{}`, `<https://docs.example/idem>; rel="describedby"`, true},
		{"Stripe error.doc_url", "application/json", `{"error":{"type":"idempotency_error","doc_url":"https://stripe.com/docs/error-codes/idempotency-key-in-use"}}`, "", true},
		{"top-level documentation_url", "application/json; charset=utf-8", `{"message":"x","documentation_url":"https://docs.example/idem"}`, "", true},
		{"type URL in plain JSON", "application/json", `{"type":"https://docs.example/idem","title":"x"}`, "", true},
		{"type that is a code, not a URL", "application/json", `{"error":{"type":"idempotency_error"}}`, "", false},
		{"no link at all", "application/json", `{"error":"idempotency error"}`, "", false},
		{"doc_url not a URL", "application/json", `{"doc_url":"see the docs"}`, "", false},
		{"URL in a text body", "text/plain", `see https://docs.example/idem`, "", false},
	} {
		r := wire.Resp{Status: 422, Header: http.Header{"Content-Type": {tc.ct}}, Body: []byte(tc.body)}
		if tc.link != "" {
			r.Header.Set("Link", tc.link)
		}
		if ok, how := scenarios.DocLink(r); ok != tc.want {
			t.Errorf("%s: DocLink = %v (%s), want %v", tc.name, ok, how, tc.want)
		}
	}
}

// serveTest serves h on loopback for the test and returns the reference
// contract's Target with the demo deployment knobs.
func serveTest(t *testing.T, h http.Handler, ttl time.Duration) *apispec.Target {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tg, err := apispec.FromURL(srv.URL, ttl, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// demoApp is the correct reference app (or one with defects), closed with
// the test.
func demoApp(t *testing.T, ttl time.Duration, defects ...string) http.Handler {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: ttl, Lease: demoLease, Defects: defects})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return app
}

// runIDs runs the named cases and returns their results by name.
func runIDs(t *testing.T, tg *apispec.Target, p *apispec.Profile, ids ...string) map[string]scenarios.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: ids})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]scenarios.Result{}
	for _, r := range rep.Results {
		out[r.Name()] = r
	}
	if len(out) == 0 {
		t.Fatalf("no result for %v", ids)
	}
	return out
}

// wantStatus checks every result of the case ID (per operation).
func wantStatus(t *testing.T, rs map[string]scenarios.Result, id string, want scenarios.Status, why string) {
	t.Helper()
	seen := false
	for _, r := range rs {
		if r.ID != id {
			continue
		}
		seen = true
		if r.Status != want {
			t.Errorf("%s: %s, want %s (%s): expected %q, observed %q %s", r.Name(), r.Status, want, why, r.Expected, r.Observed, r.Reason)
		}
	}
	if !seen {
		t.Errorf("%s did not run", id)
	}
}

// status423 answers the reference's in-flight 409s with 423 Locked, as
// some servers do.
func status423(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for h, v := range rec.Header() {
			w.Header()[h] = v
		}
		code := rec.Code
		if code == http.StatusConflict {
			code = http.StatusLocked
		}
		w.WriteHeader(code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestInFlightStatusOutsideProfile: one rule for an in-flight answer the
// profile does not list: in-flight-conflict warns (the status is
// IK-CONCURRENT-1's SHOULD) and the burst, a MUST case whose one execution
// was kept, passes (a MUST-level warning would fail the run over a SHOULD).
// Under a profile that lists 423 the burst passes too.
func TestInFlightStatusOutsideProfile(t *testing.T) {
	tg := serveTest(t, status423(demoApp(t, demoTTL)), demoTTL)
	rs := runIDs(t, tg, ietf(t), "concurrent/same-key-burst", "concurrent/in-flight-conflict")
	wantStatus(t, rs, "concurrent/same-key-burst", scenarios.Pass, "423 is not ietf's 409, but nothing executed twice: the MUST held")
	wantStatus(t, rs, "concurrent/in-flight-conflict", scenarios.Warn, "423 is not ietf's 409")

	p := ietf(t)
	p.InFlightStatus = []int{423}
	rs = runIDs(t, tg, p, "concurrent/same-key-burst")
	wantStatus(t, rs, "concurrent/same-key-burst", scenarios.Pass, "423 is the profile's in-flight status")
}

// requestIDs moves the reference's created id to /charge_id and puts a
// fresh request id at /id on every answer, replays included.
func requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for h, v := range rec.Header() {
			w.Header()[h] = v
		}
		body := rec.Body.Bytes()
		var m map[string]any
		if r.URL.Path != "/v1/effects" && json.Unmarshal(body, &m) == nil {
			if id, ok := m["id"]; ok {
				m["charge_id"], m["id"] = id, uuid.NewString()
				body, _ = json.Marshal(m)
				w.Header().Del("Content-Length")
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

// TestLostWithoutIDPointer: with no id_pointer configured, what sits at
// /id (here a request id, new on every answer) is not a created id: the
// lost-response cases count executions with the oracle only.
func TestLostWithoutIDPointer(t *testing.T) {
	tg := serveTest(t, requestIDs(demoApp(t, demoTTL)), demoTTL)
	for i := range tg.Operations {
		tg.Operations[i].IDPointer = ""
	}
	rs := runIDs(t, tg, ietf(t), "lost/dropped-response-retry")
	wantStatus(t, rs, "lost/dropped-response-retry", scenarios.Pass, "one execution; the distinct request ids at /id prove nothing")
}

// TestLostTTLGuard: a retry storm whose retries go out past TTL − margin
// (a 1 s TTL against the 1.5 s slow variant) may legally execute again:
// the case is inconclusive, never a failure of a correct server.
func TestLostTTLGuard(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	const ttl = time.Second
	tg := serveTest(t, demoApp(t, ttl), ttl)
	rs := runIDs(t, tg, ietf(t), "lost/retry-storm")
	for _, r := range rs {
		if r.Status == scenarios.Fail || r.Status == scenarios.Warn {
			t.Errorf("%s: %s against a correct server whose key expired mid-storm: expected %q, observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		}
	}
}

// TestStaleReplayOnMismatch: a server that replays the old response for a
// changed payload (IK-MISMATCH-5) fails where the profile forbids it,
// passes where it allows it, and is a finding where it is left open.
func TestStaleReplayOnMismatch(t *testing.T) {
	tg := serveTest(t, demoApp(t, demoTTL, "no-fingerprint"), demoTTL)
	for _, tc := range []struct {
		setting apispec.Tri
		want    scenarios.Status
	}{{apispec.No, scenarios.Fail}, {apispec.Yes, scenarios.Pass}, {apispec.Unknown, scenarios.Skip}} {
		p := ietf(t)
		p.StaleReplayOnMismatch = tc.setting
		rs := runIDs(t, tg, p, "mismatch/changed-body")
		wantStatus(t, rs, "mismatch/changed-body", tc.want, "stale_replay_on_mismatch "+string(tc.setting))
	}
}

// TestConflictNotPoisonedShortTTL: at --ttl 2s the retry
// after the 1.5 s slow original cannot be judged within TTL − margin; the
// case skips and names the least TTL instead of an endless inconclusive.
func TestConflictNotPoisonedShortTTL(t *testing.T) {
	const ttl = 2 * time.Second
	tg := serveTest(t, demoApp(t, ttl), ttl)
	rs := runIDs(t, tg, ietf(t), "concurrent/conflict-not-poisoned")
	wantStatus(t, rs, "concurrent/conflict-not-poisoned", scenarios.Skip, "ttl 2s is below slow + margin + stall room")
	for _, r := range rs {
		if !strings.Contains(r.Reason, "needs ttl ≥ 2.5s") {
			t.Errorf("%s: reason %q does not name the least TTL", r.Name(), r.Reason)
		}
	}
}

// holdDuplicates makes a same-key request wait while another one with the
// key is running, then passes it on (it then gets the replay).
func holdDuplicates(next http.Handler) http.Handler {
	var mu sync.Mutex
	running := map[string]chan struct{}{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		if k == "" || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		k = r.Header.Get("Authorization") + " " + r.URL.Path + " " + k
		mu.Lock()
		busy, held := running[k]
		if !held {
			busy = make(chan struct{})
			running[k] = busy
		}
		mu.Unlock()
		if held {
			select {
			case <-busy:
			case <-r.Context().Done():
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		defer func() {
			mu.Lock()
			delete(running, k)
			mu.Unlock()
			close(busy)
		}()
		next.ServeHTTP(w, r)
	})
}

// TestNoConflictIsNotASkipUnlessHeld: a duplicate answered only after the
// original completed proves no conflict behaviour. Where the profile
// forbids blocking it is inconclusive (a missed overlap looks the same);
// where blocking is allowed and every attempt showed the duplicate held,
// there is nothing to test (skip).
func TestNoConflictIsNotASkipUnlessHeld(t *testing.T) {
	tg := serveTest(t, holdDuplicates(demoApp(t, demoTTL)), demoTTL)
	p := ietf(t)
	p.BlockOK = false
	rs := runIDs(t, tg, p, "concurrent/conflict-not-poisoned")
	wantStatus(t, rs, "concurrent/conflict-not-poisoned", scenarios.Inconclusive, "no conflict obtained, blocking not allowed")
	rs = runIDs(t, tg, ietf(t), "concurrent/conflict-not-poisoned")
	wantStatus(t, rs, "concurrent/conflict-not-poisoned", scenarios.Skip, "the server holds duplicates, as block_ok allows")
}

// uuidKeysOnly answers 400 to a key that is not a bare 36-character UUID
// (once its sf-string quotes are removed), as some APIs do.
func uuidKeysOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vs := r.Header.Values("Idempotency-Key"); len(vs) > 0 && r.Method == http.MethodPost {
			k := strings.TrimSuffix(strings.TrimPrefix(vs[0], `"`), `"`)
			if _, err := uuid.Parse(k); len(vs) != 1 || len(k) != 36 || err != nil {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"type":"https://docs.example/idempotency#key-format","title":"Idempotency-Key must be a UUID","status":400}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestKeyFormatUUID: an API that accepts only bare UUIDs, declared with
// key_format uuid (and the length that implies), passes the families that
// send special keys: the generator obeys the format, and cases that cannot
// build a valid special key skip saying why.
func TestKeyFormatUUID(t *testing.T) {
	tg := serveTest(t, uuidKeysOnly(demoApp(t, demoTTL)), demoTTL)
	p := referenceProfile(t)
	p.KeyFormat, p.KeyMaxLen = apispec.KeyFormatUUID, 36
	rs := runIDs(t, tg, p, "syntax/**", "security/**", "scope/case-sensitive", "replay/same-status")
	for _, r := range rs {
		if r.Status == scenarios.Fail || r.Status == scenarios.Warn || r.Status == scenarios.Inconclusive {
			t.Errorf("%s: %s against a UUID-only API declared as such: expected %q, observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		}
	}
}

// claimAfterExpiryRace imitates a store whose expired-record cleanup races
// new claims: once a key is older than ttl, every request with it is let
// through as a new one (the cleanup deleted the record each one found).
func claimAfterExpiryRace(next http.Handler, ttl time.Duration) http.Handler {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		if k != "" && r.Method == http.MethodPost {
			mu.Lock()
			at, ok := seen[k]
			if !ok {
				seen[k] = time.Now()
			}
			mu.Unlock()
			if ok && time.Since(at) > ttl {
				r.Header.Set("Idempotency-Key", `"`+uuid.NewString()+`"`)
				next.ServeHTTP(w, r)
				// The oracle must see these executions under the key sent.
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestExpiredKeyBurst: right after expiry a same-key burst executes at
// most once on the reference; a cleanup that races the new claims lets
// several through and fails.
func TestExpiredKeyBurst(t *testing.T) {
	const ttl = time.Second
	good := serveTest(t, demoApp(t, ttl), ttl)
	rs := runIDs(t, good, ietf(t), "expiry/expired-key-burst")
	wantStatus(t, rs, "expiry/expired-key-burst", scenarios.Pass, "the reference claims an expired key atomically")

	racy := serveTest(t, claimAfterExpiryRace(demoApp(t, ttl), ttl), ttl)
	for i := range racy.Operations { // the wrapper hides the oracle's key: count created ids
		racy.Operations[i].IDPointer = "/id"
	}
	racy.Oracle = nil
	rs = runIDs(t, racy, ietf(t), "expiry/expired-key-burst")
	wantStatus(t, rs, "expiry/expired-key-burst", scenarios.Fail, "every request after expiry executes")
}

// TestInFlightOffsets: duplicates at the start, middle and last quarter of
// the 1.5 s slow original. The reference (lease 5 s) answers 409 each
// time; with a 1 s lease its lock lapses mid-request and the last-quarter
// duplicate executes again.
func TestInFlightOffsets(t *testing.T) {
	tg := startDemo(t)
	rs := runIDs(t, tg, ietf(t), "concurrent/in-flight-offsets")
	wantStatus(t, rs, "concurrent/in-flight-offsets", scenarios.Pass, "409 at every offset")

	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	lapsing := serveTest(t, app, demoTTL)
	rs = runIDs(t, lapsing, ietf(t), "concurrent/in-flight-offsets")
	wantStatus(t, rs, "concurrent/in-flight-offsets", scenarios.Fail, "the lock lapses after 1 s of a 1.5 s request")
}

// executeThen400 runs a keyless request (under a key of its own, unseen by
// the client) and then answers 400 as if it had rejected it.
func executeThen400(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Idempotency-Key") == "" && !strings.HasPrefix(r.URL.Path, "/v1/effects") {
			r.Header.Set("Idempotency-Key", `"`+uuid.NewString()+`"`)
			next.ServeHTTP(httptest.NewRecorder(), r)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"type":"https://docs.example/idempotency","title":"Idempotency-Key is required","status":400}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestMissingRejectedAsksTheOracle: a keyless request's execution can be
// counted with an oracle that is not per key (the reference's totals): a
// 400 that executed fails; with the per-key oracle the 400 alone is
// unverifiable, never a pass.
func TestMissingRejectedAsksTheOracle(t *testing.T) {
	global := func(tg *apispec.Target) *apispec.Target {
		tg.Oracle.URL = "/v1/effects"
		return tg
	}
	for _, tc := range []struct {
		name string
		tg   *apispec.Target
		want scenarios.Status
	}{
		{"correct, global oracle", global(startDemo(t)), scenarios.Pass},
		{"400 after executing, global oracle", global(serveTest(t, executeThen400(demoApp(t, demoTTL)), demoTTL)), scenarios.Fail},
		{"correct, per-key oracle", startDemo(t), scenarios.Unverifiable},
	} {
		rs := runIDs(t, tc.tg, ietf(t), "missing/rejected")
		wantStatus(t, rs, "missing/rejected", tc.want, tc.name)
	}
}

// TestTTLNever: an API that declares keys never expire gets its expiry
// cases skipped with the declaration recorded, not "needs ttl".
func TestTTLNever(t *testing.T) {
	tg := startDemo(t)
	tg.TTL, tg.NeverExpires = 0, true
	rs := runIDs(t, tg, ietf(t), "expiry/**")
	for _, r := range rs {
		if r.Status != scenarios.Skip || !strings.Contains(r.Reason, "ttl: never") || r.Observed == "" {
			t.Errorf("%s: %s %q %s, want a skip recording ttl: never", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
}

// holdPastTTL passes a POST whose key was seen before to next only once
// the key's first request is ttl old: a server-side stall that makes the
// duplicate arrive, legally, after the record expired.
func holdPastTTL(next http.Handler, ttl time.Duration) http.Handler {
	var mu sync.Mutex
	first := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		if r.Method == http.MethodPost && k != "" {
			mu.Lock()
			at, seen := first[k]
			if !seen {
				first[k] = time.Now()
			}
			mu.Unlock()
			if seen {
				time.Sleep(time.Until(at.Add(ttl + 300*time.Millisecond)))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestInFlightOffsetsStalledDuplicate: duplicates sent inside the
// original's run but handled only after the key expired execute afresh,
// legally; judged by when they were answered, that is inconclusive, never
// a fail (judged by when they were sent, it failed a correct server on a
// loaded machine).
func TestInFlightOffsetsStalledDuplicate(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	tg := serveTest(t, holdPastTTL(app, demoTTL), demoTTL)
	rs := runIDs(t, tg, ietf(t), "concurrent/in-flight-offsets@charges")
	wantStatus(t, rs, "concurrent/in-flight-offsets", scenarios.Inconclusive, "every duplicate was handled after the key expired")
}

// TestKeylessExecutionFails: a keyless request that executes on a
// key-required operation fails the run (exit 1) at the MUST it breaks,
// whatever the oracle: missing/rejected and missing/repeat-fails-again
// fail; the MUST case went inconclusive and the run exited 5.
func TestKeylessExecutionFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, startDemo(t, "missing-key-passthrough"), ietf(t), scenarios.RunOptions{Run: []string{"missing/**"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if (r.ID == "missing/rejected" || r.ID == "missing/repeat-fails-again") && r.Status != scenarios.Fail {
			t.Errorf("%s: %s, want fail: observed %q %s", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
	if j := rep.Judge(); j.Outcome != scenarios.OutcomeFail || j.Outcome.ExitCode() != 1 {
		t.Errorf("outcome %v (exit %d), want a failure (exit 1): %v", j.Outcome, j.Outcome.ExitCode(), j.Problems)
	}
}
