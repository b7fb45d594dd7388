package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// roundsAPI answers same-key bursts in the order their second requests
// arrive (the run's calibration sends keys once each): the first burst
// loses one request to load shedding (503: noted, not judged), the third executes
// twice (a fail), every other executes once. A burst that stops at its
// first non-pass round never reaches the third.
type roundsAPI struct {
	mu     sync.Mutex
	bursts map[string]int // key -> its index among the bursts
	seen   map[string]int // requests seen per key
	execs  map[string]int
	ids    map[string]string
}

func newRoundsAPI() *roundsAPI {
	return &roundsAPI{bursts: map[string]int{}, seen: map[string]int{}, execs: map[string]int{}, ids: map[string]string{}}
}

func (a *roundsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if servedEffects(w, r, &a.mu, a.execs) {
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	a.mu.Lock()
	a.seen[k]++
	nth := a.seen[k]
	if nth == 2 {
		a.bursts[k] = len(a.bursts)
	}
	idx, burst := a.bursts[k]
	execute := nth == 1 || (burst && idx == 2 && nth == 2)
	if execute {
		a.execs[k]++
		a.ids[k] = fmt.Sprintf("or_%s_%d", k, nth)
	}
	id := a.ids[k]
	a.mu.Unlock()
	switch {
	case burst && idx == 0 && nth == 2:
		w.WriteHeader(http.StatusServiceUnavailable)
	case execute:
		writeTestJSON(w, http.StatusCreated, map[string]string{"id": id})
	default:
		writeTestJSON(w, http.StatusCreated, map[string]string{"id": id}) // the replay
	}
}

func roundsTarget(base string) *apispec.Target {
	return &apispec.Target{
		BaseURL: base, KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString, Timeout: 5 * time.Second,
		Principals: []apispec.Principal{{Name: "u"}},
		Operations: []apispec.Operation{{Name: "orders", Method: "POST", Path: "/orders",
			Body: json.RawMessage(`{"amount":1}`), IDPointer: "/id"}},
		Oracle: &apispec.Oracle{URL: "/effects?key={key}", Pointer: "/executions"},
	}
}

// TestBurstRunsAllRounds: concurrent/same-key-burst runs every round and
// reports the worst, whichever synchronisation releases it; the evidence
// says which one did.
func TestBurstRunsAllRounds(t *testing.T) {
	for _, sync := range []string{"", apispec.SyncBarrier} {
		t.Run("sync="+sync, func(t *testing.T) {
			api := newRoundsAPI()
			srv := httptest.NewServer(api)
			defer srv.Close()
			p := ietf(t)
			p.BurstRounds, p.BurstSize, p.BurstSync = 4, 4, sync
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, roundsTarget(srv.URL), p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 {
				t.Fatalf("%d results, want 1", len(rep.Results))
			}
			r := rep.Results[0]
			if r.Status != scenarios.Fail || !strings.Contains(r.Observed, "4 of 4 rounds") || !strings.Contains(r.Observed, "round 3 of 4") {
				t.Errorf("%s: expected %q observed %q %s; want the fail of round 3 after 4 of 4 rounds", r.Status, r.Expected, r.Observed, r.Reason)
			}
			api.mu.Lock()
			bursts := len(api.bursts)
			api.mu.Unlock()
			if bursts != 4 {
				t.Errorf("the server saw %d bursts, want 4 (one per round)", bursts)
			}
			want := "last-byte sync over HTTP/1.1"
			if sync == apispec.SyncBarrier {
				want = "released by a barrier"
			}
			if !strings.Contains(r.Observed, want) {
				t.Errorf("observed %q does not say %q", r.Observed, want)
			}
		})
	}
}

// entryAPI records, for every request, when its handler was entered and
// when its body had been read in full, by key.
type entryAPI struct {
	mu    sync.Mutex
	byKey map[string]*entries
}

type entries struct {
	entered, got []time.Time
	proto        []int
}

func (a *entryAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	in := time.Now()
	b, _ := io.ReadAll(r.Body)
	k := r.Header.Get("Idempotency-Key")
	a.mu.Lock()
	if a.byKey[k] == nil {
		a.byKey[k] = &entries{}
	}
	en := a.byKey[k]
	en.entered, en.got, en.proto = append(en.entered, in), append(en.got, time.Now()), append(en.proto, r.ProtoMajor)
	a.mu.Unlock()
	writeTestJSON(w, http.StatusCreated, map[string]any{"id": r.Header.Get("Idempotency-Key"), "len": len(b)})
}

// burst is the entries of the key with the most requests: the burst's
// (the run's calibration sends its keys once each).
func (a *entryAPI) burst() *entries {
	a.mu.Lock()
	defer a.mu.Unlock()
	var most *entries
	for _, en := range a.byKey {
		if most == nil || len(en.entered) > len(most.entered) {
			most = en
		}
	}
	return most
}

// beforeFirstBody counts the burst's handlers entered before any of its
// bodies was complete: the requests a check-then-insert looking up before
// the body can race.
func (en *entries) beforeFirstBody() (n, of int) {
	first := en.got[0]
	for _, g := range en.got {
		if g.Before(first) {
			first = g
		}
	}
	for _, e := range en.entered {
		if e.Before(first) {
			n++
		}
	}
	return n, len(en.entered)
}

// TestLastByteSyncEntersHandlersFirst: under last-byte sync the server
// enters the handlers of the burst's requests before any body completes,
// over HTTP/1.1 and over HTTP/2 (TLS); the barrier gives no such promise.
// Under load a stalled server may take in fewer than all of them within
// the settle time, so the test asks for at least two (what a race needs)
// and logs the figure.
func TestLastByteSyncEntersHandlersFirst(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			api := &entryAPI{byKey: map[string]*entries{}}
			srv := httptest.NewUnstartedServer(api)
			tg := roundsTarget("")
			if h2 {
				srv.EnableHTTP2 = true
				srv.StartTLS()
				if err := tg.SetTLS(apispec.TLS{InsecureSkipVerify: true}); err != nil {
					t.Fatal(err)
				}
			} else {
				srv.Start()
			}
			defer srv.Close()
			tg.BaseURL, tg.Oracle = srv.URL, nil
			p := ietf(t)
			p.BurstRounds, p.BurstSize = 1, 16
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst"}})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			want := "last-byte sync over HTTP/1.1"
			if h2 {
				want = "last-byte sync over HTTP/2"
			}
			if !strings.Contains(r.Observed+r.Reason, want) {
				t.Fatalf("%s: observed %q %s; want %q", r.Status, r.Observed, r.Reason, want)
			}
			burst := api.burst()
			n, of := burst.beforeFirstBody()
			t.Logf("%d of %d handlers entered before the first body completed", n, of)
			if of != 16 || n < 2 {
				t.Errorf("%d of %d handlers entered before the first body completed; want 16 requests, at least 2 entered", n, of)
			}
			for _, pm := range burst.proto {
				if (pm == 2) != h2 {
					t.Errorf("a request arrived as HTTP/%d", pm)
				}
			}
			for _, x := range r.Exchanges {
				if x.Response != nil && x.Response.Status == http.StatusCreated && !strings.Contains(string(x.Response.Body), `"len":12`) {
					t.Errorf("%s: the server read %s, want the 12-byte body", x.Label, x.Response.Body)
				}
			}
		})
	}
}

// startDemoProto is startDemo over HTTP/1.1 (h2 false), or over TLS with
// HTTP/2 negotiated (h2 true; the target skips certificate checks).
func startDemoProto(t testing.TB, h2 bool, defects ...string) *apispec.Target {
	t.Helper()
	if !h2 {
		return startDemo(t, defects...)
	}
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease, Defects: defects})
	if err != nil {
		t.Fatalf("demo.New(%v): %v", defects, err)
	}
	srv := httptest.NewUnstartedServer(app)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.SetTLS(apispec.TLS{InsecureSkipVerify: true}); err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestLookupBeforeBodyCaught: the reference's lookup-before-body defect (a
// check-then-insert whose window is the body's read, microseconds when
// the body comes with the headers) fails the burst under last-byte sync,
// over HTTP/1.1 and HTTP/2; the correct reference passes it.
func TestLookupBeforeBodyCaught(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		for _, defect := range []string{"", "lookup-before-body"} {
			t.Run(fmt.Sprintf("h2=%v/defect=%s", h2, defect), func(t *testing.T) {
				var defects []string
				if defect != "" {
					defects = []string{defect}
				}
				tg := startDemoProto(t, h2, defects...)
				tg.Operations = tg.Operations[:1]
				p := referenceProfile(t) // the default 8 rounds: a loaded server may miss the settle time of one
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst"}})
				if err != nil {
					t.Fatal(err)
				}
				r := rep.Results[0]
				t.Logf("%s: %s %s", r.Status, r.Observed, r.Reason)
				switch {
				case defect == "" && r.Status != scenarios.Pass && r.Status != scenarios.Inconclusive:
					t.Errorf("correct reference: %s, want pass", r.Status)
				case defect != "" && r.Status != scenarios.Fail:
					t.Errorf("lookup-before-body: %s, want fail", r.Status)
				}
			})
		}
	}
}

// reclaimAPI reclaims an expired record without an in-flight marker (a
// hold-out defect of issue 18): every request that finds the expired
// record executes, until one of them stores its outcome. A fresh key is
// claimed correctly. "delay_ms" in the body keeps the handler running.
type reclaimAPI struct {
	ttl   time.Duration
	mu    sync.Mutex
	recs  map[string]*reclaimRecord
	execs map[string]int
	next  int
}

type reclaimRecord struct {
	done    bool
	id      string
	expires time.Time
}

func (a *reclaimAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if servedEffects(w, r, &a.mu, a.execs) {
		return
	}
	var in struct {
		DelayMS int `json:"delay_ms"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	k := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	a.mu.Lock()
	rec := a.recs[k]
	switch {
	case rec != nil && time.Now().Before(rec.expires) && rec.done:
		id := rec.id
		a.mu.Unlock()
		writeTestJSON(w, http.StatusCreated, map[string]string{"id": id})
		return
	case rec != nil && time.Now().Before(rec.expires):
		a.mu.Unlock()
		writeTestJSON(w, http.StatusConflict, map[string]string{"error": "in flight"})
		return
	case rec == nil:
		a.recs[k] = &reclaimRecord{expires: time.Now().Add(a.ttl)}
	}
	// The defect: an expired record is reclaimed by just running.
	a.execs[k]++
	a.next++
	id := fmt.Sprintf("rc_%d", a.next)
	a.mu.Unlock()
	time.Sleep(time.Duration(in.DelayMS) * time.Millisecond)
	a.mu.Lock()
	a.recs[k] = &reclaimRecord{done: true, id: id, expires: time.Now().Add(a.ttl)}
	a.mu.Unlock()
	writeTestJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// TestExpiredKeyBurstRidesSlow: expiry/expired-key-burst sends its burst
// with the slow variant, so the first execution after expiry still runs
// when the rest arrive: a reclaim without an in-flight marker executes
// them all (it passed when the burst sent the normal body, finishing in
// microseconds).
func TestExpiredKeyBurstRidesSlow(t *testing.T) {
	const ttl = time.Second
	srv := httptest.NewServer(&reclaimAPI{ttl: ttl, recs: map[string]*reclaimRecord{}, execs: map[string]int{}})
	defer srv.Close()
	tg := roundsTarget(srv.URL)
	tg.TTL = ttl
	tg.Operations[0].Variants = map[string]apispec.Variant{
		apispec.VariantSlow: {Patch: json.RawMessage(`{"delay_ms":500}`), Duration: 500 * time.Millisecond},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"expiry/expired-key-burst"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Status != scenarios.Fail || !strings.Contains(r.Observed, "the slow variant") {
		t.Errorf("%s: expected %q observed %q %s; want a fail on the slow variant", r.Status, r.Expected, r.Observed, r.Reason)
	}
}

// servedEffects answers the test APIs' requests that are not POSTs: the
// per-key effects oracle (GET /effects?key=K, execs read under mu) and
// 204 for anything else. It reports whether it answered.
func servedEffects(w http.ResponseWriter, r *http.Request, mu *sync.Mutex, execs map[string]int) bool {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/effects":
		mu.Lock()
		n := execs[r.URL.Query().Get("key")]
		mu.Unlock()
		writeTestJSON(w, http.StatusOK, map[string]int{"executions": n})
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}
