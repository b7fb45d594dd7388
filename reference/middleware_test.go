package reference_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// app is the handler behind the middleware in these tests. Request headers
// steer it without touching the fingerprinted body: X-Status (answer
// status), X-Panic, X-Block (wait until unblock is closed), X-No-Store.
type app struct {
	executions atomic.Int64
	started    chan struct{} // receives once per execution that blocks
	unblock    chan struct{}
	lastCtx    atomic.Value // context.Context of the last execution
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.executions.Add(1)
	a.lastCtx.Store(r.Context())
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Block") != "" {
		a.started <- struct{}{}
		<-a.unblock
	}
	if r.Header.Get("X-Panic") != "" {
		panic("handler bug")
	}
	if r.Header.Get("X-No-Store") != "" {
		reference.DoNotStore(r)
	}
	status := http.StatusCreated
	if s := r.Header.Get("X-Status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	key, _ := reference.KeyFromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/things/"+strconv.FormatInt(n, 10))
	w.Header().Set("X-Request-Id", strconv.FormatInt(time.Now().UnixNano(), 10)) // not replayable
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"execution":%d,"key":%q,"body_len":%d}`, n, key, len(body))
}

type env struct {
	t      *testing.T
	app    *app
	store  *memstore.Store
	srv    *httptest.Server
	client *http.Client
}

func newEnv(t *testing.T, store reference.Store, opts ...reference.Option) *env {
	t.Helper()
	ms := memstore.New(memstore.WithSweepInterval(50 * time.Millisecond))
	if store == nil {
		store = ms
	}
	a := &app{started: make(chan struct{}, 64), unblock: make(chan struct{})}
	srv := httptest.NewServer(reference.Middleware(store, opts...)(a))
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	e := &env{t: t, app: a, store: ms, srv: srv, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		ms.Close()
	})
	return e
}

type result struct {
	status int
	header http.Header
	body   string
}

// send issues method path with headers given as "Name: value" lines; a
// name may repeat (two field lines).
func (e *env) send(method, path, body string, headers ...string) result {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{resp.StatusCode, resp.Header, string(b)}
}

const body1 = `{"amount":1000,"currency":"usd"}`

func (e *env) post(key, body string, headers ...string) result {
	e.t.Helper()
	hs := append([]string{"Authorization: Bearer alice"}, headers...)
	if key != "" {
		hs = append(hs, "Idempotency-Key: "+key)
	}
	return e.send("POST", "/things", body, hs...)
}

// wantProblem checks a middleware error: status, problem+json with a type
// URI, no-store, and that nothing ran.
func (e *env) wantProblem(r result, status int, execsBefore int64) {
	e.t.Helper()
	if r.status != status || r.header.Get("Content-Type") != "application/problem+json" || r.header.Get("Cache-Control") != "no-store" {
		e.t.Fatalf("got %d %q Cache-Control=%q, want %d problem+json no-store (%s)", r.status, r.header.Get("Content-Type"), r.header.Get("Cache-Control"), status, r.body)
	}
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.body), &p); err != nil || !strings.HasPrefix(p.Type, "https://") || p.Title == "" || p.Status != status {
		e.t.Fatalf("problem body %q: %v", r.body, err)
	}
	if n := e.app.executions.Load(); n != execsBefore {
		e.t.Fatalf("handler ran (%d executions, want %d)", n, execsBefore)
	}
}

func (e *env) wantExecutions(n int64) {
	e.t.Helper()
	if got := e.app.executions.Load(); got != n {
		e.t.Fatalf("executions = %d, want %d", got, n)
	}
}

func isReplay(r result) bool { return r.header.Get("Idempotent-Replayed") == "true" }

func TestMiddlewareRules(t *testing.T) {
	cases := []struct {
		name, rule string
		opts       []reference.Option
		run        func(t *testing.T, e *env)
	}{
		{"replay-byte-identical", "a completed key replays status, allow-listed headers and body bytes with Idempotent-Replayed: true", nil, func(t *testing.T, e *env) {
			a := e.post(`"k1"`, body1)
			b := e.post(`"k1"`, body1)
			if a.status != 201 || b.status != 201 || a.body != b.body || isReplay(a) || !isReplay(b) {
				t.Fatalf("first %d %q replay=%v; second %d %q replay=%v", a.status, a.body, isReplay(a), b.status, b.body, isReplay(b))
			}
			if b.header.Get("Location") != a.header.Get("Location") || b.header.Get("Content-Type") != "application/json" {
				t.Fatalf("replayed headers: %v", b.header)
			}
			if b.header.Get("X-Request-Id") != "" {
				t.Fatalf("a header outside the allow-list was replayed")
			}
			e.wantExecutions(1)
		}},
		{"sf-string-and-raw", `"abc" and abc name one key; sf escapes are decoded`, nil, func(t *testing.T, e *env) {
			e.post(`"abc"`, body1)
			if r := e.post(`abc`, body1); !isReplay(r) {
				t.Fatalf("raw spelling executed afresh")
			}
			e.post(`"a\"b"`, body1)
			if r := e.post(`"a\"b"`, body1); !isReplay(r) || !strings.Contains(r.body, `"key":"a\"b"`) {
				t.Fatalf("escaped key: %q", r.body)
			}
			e.wantExecutions(2)
		}},
		{"sf-string-only", "WithSFStringOnly rejects raw keys with 400", []reference.Option{reference.WithSFStringOnly()}, func(t *testing.T, e *env) {
			e.wantProblem(e.post(`abc`, body1), 400, 0)
			if r := e.post(`"abc"`, body1); r.status != 201 {
				t.Fatalf("sf-string: %d", r.status)
			}
		}},
		{"invalid-keys", "malformed keys get 400 problem+json and nothing runs", nil, func(t *testing.T, e *env) {
			bad := [][]string{
				{`Idempotency-Key: ""`},                                 // empty
				{`Idempotency-Key: "` + strings.Repeat("k", 256) + `"`}, // too long
				{`Idempotency-Key: ` + strings.Repeat("k", 256)},        // too long, raw
				{`Idempotency-Key: "a b"`},                              // space is not visible
				{`Idempotency-Key: "a"`, `Idempotency-Key: "b"`},        // two field lines
				{`Idempotency-Key: "a", "b"`},                           // a list
				{`Idempotency-Key: "abc`},                               // unterminated
				{`Idempotency-Key: "a";p=1, "b"`},                       // a list with parameters
			}
			for _, hs := range bad {
				e.wantProblem(e.send("POST", "/things", body1, append([]string{"Authorization: Bearer alice"}, hs...)...), 400, 0)
			}
			if r := e.post(`"`+strings.Repeat("k", 255)+`"`, body1); r.status != 201 {
				t.Fatalf("255-char key: %d", r.status)
			}
		}},
		{"missing-key", "a mutating request without a key gets 400 problem+json; safe methods pass", nil, func(t *testing.T, e *env) {
			for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
				e.wantProblem(e.send(m, "/things", body1, "Authorization: Bearer alice"), 400, 0)
			}
			if r := e.send("GET", "/things", ""); r.status != 201 {
				t.Fatalf("GET without key: %d", r.status)
			}
		}},
		{"key-optional", "WithKeyOptional runs keyless requests, unprotected", []reference.Option{reference.WithKeyOptional()}, func(t *testing.T, e *env) {
			e.post("", body1)
			e.post("", body1)
			e.wantExecutions(2)
		}},
		{"scope", "scope is (principal, method, path, key): each differing part executes fresh", nil, func(t *testing.T, e *env) {
			e.post("k", body1)
			for _, r := range []result{
				e.send("POST", "/things", body1, "Authorization: Bearer bob", "Idempotency-Key: k"),
				e.send("POST", "/other", body1, "Authorization: Bearer alice", "Idempotency-Key: k"),
				e.send("PUT", "/things", body1, "Authorization: Bearer alice", "Idempotency-Key: k"),
			} {
				if r.status != 201 || isReplay(r) {
					t.Fatalf("other scope replayed: %d", r.status)
				}
			}
			e.wantExecutions(4)
		}},
		{"canonical-fingerprint", "member order and whitespace do not change the fingerprint", nil, func(t *testing.T, e *env) {
			e.post("k", body1)
			if r := e.post("k", " {\n \"currency\": \"usd\", \"amount\": 1000 }"); !isReplay(r) {
				t.Fatalf("reordered body: %d", r.status)
			}
		}},
		{"jcs-numbers", "a re-serialized number (1000.0, 1e3) replays; a different value beyond a double's precision is 422", nil, func(t *testing.T, e *env) {
			e.post("k", `{"amount":1000,"currency":"usd"}`)
			for _, same := range []string{`{"amount":1000.0,"currency":"usd"}`, `{"amount":1e3,"currency":"\u0075sd"}`} {
				if r := e.post("k", same); !isReplay(r) {
					t.Fatalf("%s: %d, want a replay", same, r.status)
				}
			}
			e.post("big", `{"amount":12345678901234567890}`)
			e.wantProblem(e.post("big", `{"amount":12345678901234567891}`), 422, 2)
		}},
		{"ignored-fields", "WithIgnoreFields leaves volatile members out of the fingerprint", []reference.Option{reference.WithIgnoreFields("sent_at")}, func(t *testing.T, e *env) {
			e.post("k", `{"amount":1,"sent_at":"10:00"}`)
			if r := e.post("k", `{"amount":1,"sent_at":"10:01"}`); !isReplay(r) {
				t.Fatalf("volatile change: %d", r.status)
			}
			e.wantProblem(e.post("k", `{"amount":2,"sent_at":"10:01"}`), 422, 1)
		}},
		{"mismatch-422", "same key, different body: 422, nothing runs, the record survives; a raw body is hashed as bytes", nil, func(t *testing.T, e *env) {
			a := e.post("k", body1)
			e.wantProblem(e.post("k", `{"amount":1001,"currency":"usd"}`), 422, 1)
			e.wantProblem(e.post("k", `{"amount":1001,"currency":"usd"}`), 422, 1)
			if r := e.post("k", body1); r.body != a.body {
				t.Fatalf("original no longer replays: %q", r.body)
			}
			e.post("t", "plain text")
			e.wantProblem(e.post("t", "plain  text"), 422, 2)
		}},
		{"in-flight", "a retry in flight gets 409 + Retry-After (a changed body 422); the 409 is not stored", nil, func(t *testing.T, e *env) {
			done := make(chan result, 1)
			go func() { done <- e.post("k", body1, "X-Block: 1") }()
			<-e.app.started
			r := e.post("k", body1)
			e.wantProblem(r, 409, 1)
			if r.header.Get("Retry-After") == "" {
				t.Fatalf("409 without Retry-After")
			}
			e.wantProblem(e.post("k", `{"amount":2}`), 422, 1)
			close(e.app.unblock)
			first := <-done
			if again := e.post("k", body1); again.body != first.body || !isReplay(again) {
				t.Fatalf("after completion: %d %q", again.status, again.body)
			}
		}},
		{"burst-one-winner", "32 concurrent same-key requests: exactly one execution, the rest 409", nil, func(t *testing.T, e *env) {
			done := make(chan result, 1)
			go func() { done <- e.post("k", body1, "X-Block: 1") }()
			<-e.app.started
			var wg sync.WaitGroup
			var conflicts atomic.Int64
			for range 31 {
				wg.Go(func() {
					if e.post("k", body1).status == 409 {
						conflicts.Add(1)
					}
				})
			}
			wg.Wait()
			close(e.app.unblock)
			<-done
			if conflicts.Load() != 31 {
				t.Fatalf("%d of 31 duplicates got 409", conflicts.Load())
			}
			e.wantExecutions(1)
		}},
		{"4xx-stored", "a handler 4xx (402) is stored and replayed", nil, func(t *testing.T, e *env) {
			e.post("k", body1, "X-Status: 402")
			if r := e.post("k", body1); r.status != 402 || !isReplay(r) {
				t.Fatalf("retry: %d", r.status)
			}
			e.wantExecutions(1)
		}},
		{"5xx-released", "a handler 5xx releases the key: the retry executes", nil, func(t *testing.T, e *env) {
			e.post("k", body1, "X-Status: 503")
			if r := e.post("k", body1); r.status != 201 || isReplay(r) {
				t.Fatalf("retry: %d", r.status)
			}
			e.wantExecutions(2)
		}},
		{"5xx-stored-stripe", "WithStoreServerErrors stores 5xx too", []reference.Option{reference.WithStoreServerErrors()}, func(t *testing.T, e *env) {
			e.post("k", body1, "X-Status: 500")
			if r := e.post("k", body1); r.status != 500 || !isReplay(r) {
				t.Fatalf("retry: %d", r.status)
			}
			e.wantExecutions(1)
		}},
		{"panic-released", "a panic answers 500 problem+json and releases the key", nil, func(t *testing.T, e *env) {
			e.wantProblem(e.post("k", body1, "X-Panic: 1"), 500, 1)
			if r := e.post("k", body1); r.status != 201 {
				t.Fatalf("retry: %d", r.status)
			}
		}},
		{"do-not-store", "DoNotStore leaves no record: the same key with another body executes", nil, func(t *testing.T, e *env) {
			e.post("k", body1, "X-No-Store: 1", "X-Status: 400")
			if r := e.post("k", `{"amount":5}`); r.status != 201 {
				t.Fatalf("corrected request: %d", r.status)
			}
		}},
		{"lease-reclaim", "an in-flight record whose owner died is reclaimable after the lease", nil, func(t *testing.T, e *env) {
			_, err := e.store.Claim(context.Background(), reference.ClaimRequest{
				Scope:       reference.Scope{Principal: "Bearer alice", Method: "POST", Path: "/things", Key: "k"},
				Fingerprint: reference.Fingerprint([]byte(body1)), Lease: time.Second, TTL: time.Hour,
			})
			if err != nil {
				t.Fatal(err)
			}
			e.wantProblem(e.post("k", body1), 409, 0)
			time.Sleep(1100 * time.Millisecond)
			if r := e.post("k", body1); r.status != 201 {
				t.Fatalf("after the lease: %d", r.status)
			}
		}},
		{"ttl", "records live for the TTL from the claim; afterwards the key is fresh", []reference.Option{reference.WithTTL(time.Second)}, func(t *testing.T, e *env) {
			e.post("k", body1)
			if r := e.post("k", body1); !isReplay(r) {
				t.Fatalf("inside the TTL: not a replay")
			}
			time.Sleep(1100 * time.Millisecond)
			if r := e.post("k", body1); isReplay(r) || r.status != 201 {
				t.Fatalf("after the TTL: %d replay=%v", r.status, isReplay(r))
			}
			e.wantExecutions(2)
		}},
		{"body-limit", "a body over the limit gets 413 problem+json", []reference.Option{reference.WithMaxBody(64)}, func(t *testing.T, e *env) {
			e.wantProblem(e.post("k", strings.Repeat("x", 65)), 413, 0)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if t.Failed() {
					t.Logf("rule: %s", c.rule)
				}
			}()
			c.run(t, newEnv(t, nil, c.opts...))
		})
	}
}

// failingStore is a store whose backend is down.
type failingStore struct{ reference.Store }

func (failingStore) Claim(context.Context, reference.ClaimRequest) (reference.Claim, error) {
	return reference.Claim{}, fmt.Errorf("dial tcp: connection refused: %w", reference.ErrUnavailable)
}

func TestStoreUnavailableIs503(t *testing.T) {
	e := newEnv(t, failingStore{})
	e.wantProblem(e.post("k", body1), 503, 0)
}

// atomicStore wraps the memory store with a unit of work that records what
// the middleware did with it.
type atomicStore struct {
	*memstore.Store
	mu        sync.Mutex
	committed []int // statuses
	rolled    int
}

type unitKey struct{}

type unit struct{ s *atomicStore }

func (s *atomicStore) Begin(ctx context.Context, scope reference.Scope, token string) (reference.Unit, context.Context, error) {
	return unit{s}, context.WithValue(ctx, unitKey{}, "open"), nil
}

func (u unit) Commit(ctx context.Context, resp reference.Response) error {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	u.s.committed = append(u.s.committed, resp.Status)
	return nil
}

func (u unit) Rollback(ctx context.Context) error {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	u.s.rolled++
	return nil
}

// TestAtomicStoreUnit: with an Atomic store the handler runs inside the
// unit's context, a stored outcome is committed through the unit and a 5xx
// is rolled back and released.
func TestAtomicStoreUnit(t *testing.T) {
	ms := memstore.New()
	defer ms.Close()
	s := &atomicStore{Store: ms}
	e := newEnv(t, s)
	e.post("a", body1)
	if ctx, _ := e.app.lastCtx.Load().(context.Context); ctx == nil || ctx.Value(unitKey{}) != "open" {
		t.Fatalf("handler did not run inside the unit's context")
	}
	e.post("b", body1, "X-Status: 503")
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.committed) != 1 || s.committed[0] != 201 || s.rolled != 1 {
		t.Fatalf("committed %v, rolled back %d; want [201] and 1", s.committed, s.rolled)
	}
	if rec, _ := ms.Lookup(context.Background(), reference.Scope{Principal: "Bearer alice", Method: "POST", Path: "/things", Key: "b"}); rec != nil {
		t.Fatalf("the 503's claim was not released")
	}
}

func TestUnknownDefectPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Middleware accepted an unknown defect")
		}
	}()
	reference.Middleware(nil, reference.WithDefects("nope"))
}

func TestParseDefects(t *testing.T) {
	ds, err := reference.ParseDefects([]string{"no-expiry", " replay-as-200 "})
	if err != nil || len(ds) != 2 {
		t.Fatalf("%v %v", ds, err)
	}
	if _, err := reference.ParseDefects([]string{"bogus"}); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Fatalf("err = %v", err)
	}
}
