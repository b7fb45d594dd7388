package scenarios_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/knobless"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestInFlightOffsetsShortTTL: under a 2 s TTL (README's until now) the duplicates
// of no-inflight-lock re-run the 1.5 s slow variant and answer at about
// +2.7 s, past TTL − margin; they were sent at +0, +0.75 s and +1.2 s,
// inside it, so the double execution is a failure (it was judged by its
// answer time and ended inconclusive: "a stall: the retry was answered
// 2.711s after"). Up to 3 runs, for a loaded machine: never a pass, and
// at least one fail.
func TestInFlightOffsetsShortTTL(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second, "no-inflight-lock")
	var seen []string
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"concurrent/in-flight-offsets@charges"}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 1 {
			t.Fatalf("%d results, want 1", len(rep.Results))
		}
		r := rep.Results[0]
		switch r.Status {
		case scenarios.Fail:
			return
		case scenarios.Pass:
			t.Fatalf("no-inflight-lock passes %s: %s", r.Name(), r.Observed)
		}
		seen = append(seen, string(r.Status)+": "+r.Reason)
	}
	t.Errorf("no-inflight-lock under --ttl 2s never failed concurrent/in-flight-offsets: %q", seen)
}

// TestOtherEndpointCounterOfOneOperation: one counter pointer for the
// whole API that counts charges only (oracle {url: /_effects, pointer:
// /charges}). scope/other-endpoint@charges sends the key to refunds, which
// that counter cannot see: the refund is judged by its own evidence (its
// id against the charge's), so the correct server is not failed ("replayed
// charges's response") and the defect is still caught — also when the
// refunds instances are left out of the run (calibration checks every
// operation a selected case touches). A start-up note says the counter is
// shared.
func TestOtherEndpointCounterOfOneOperation(t *testing.T) {
	for _, row := range []struct {
		defects []string
		want    scenarios.Status
	}{
		{nil, scenarios.Skip}, // ietf leaves scope_endpoint open: "independent" is recorded
		{[]string{"no-endpoint-scope"}, scenarios.Fail},
	} {
		tg := globalEffects(t, demo.Options{Defects: row.defects}, false, false)
		tg.Oracle.Pointer = "/charges"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"scope/other-endpoint"}, Skip: []string{"**/*@refunds"}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Results) != 1 {
			t.Fatalf("%v: %d results, want scope/other-endpoint@charges alone", row.defects, len(rep.Results))
		}
		r := rep.Results[0]
		if r.Status != row.want {
			t.Errorf("%v: %s: %s, want %s (observed %q, %s)", row.defects, r.Name(), r.Status, row.want, r.Observed, r.Reason)
		}
		if row.want == scenarios.Skip && !strings.Contains(r.Observed, "independent") {
			t.Errorf("%v: observed %q, want the independent execution recorded", row.defects, r.Observed)
		}
		notes := strings.Join(rep.Notes, "\n")
		if !strings.Contains(notes, "it does not count refunds") || !strings.Contains(notes, "POST /v1/refunds") {
			t.Errorf("%v: notes %q, want the shared counter named and refunds found unseen by it", row.defects, notes)
		}
	}
}

// keyQuirks wraps the reference with legal or illegal key handling the
// reference lacks: "fold" lower-cases every key before lookup; "blank-ok"
// accepts a blank key (a valid sf-string) as a key of its own.
type keyQuirks struct {
	next http.Handler
	mode string
	seen *keySet // "fold-mismatch": the keys sent so far
}

// keySet is a set of keys safe for concurrent use.
type keySet struct {
	mu   sync.Mutex
	keys map[string]bool
}

// Has reports whether k was added before, and adds it.
func (s *keySet) Has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	had := s.keys[k]
	s.keys[k] = true
	return had
}

func (q keyQuirks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := r.Header.Get("Idempotency-Key")
	if q.seen != nil {
		q.seen.Has(k)
	}
	switch {
	case q.mode == "fold" && k != "":
		r.Header.Set("Idempotency-Key", strings.ToLower(k))
	case q.mode == "fold-mismatch" && k != strings.ToUpper(k) && q.seen.Has(strings.ToUpper(k)):
		// Folds the key and fingerprints its spelling: the lower-case
		// spelling of a completed key meets its record as a mismatch.
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"title":"Idempotency-Key is already used with another request"}`))
		return
	case q.mode == "blank-ok" && k == `"   "`:
		r.Header.Set("Idempotency-Key", `"blank-key"`)
	}
	q.next.ServeHTTP(w, r)
}

// TestKeyProfileSettings: blank_key and key_case say what the draft leaves
// open. A blank key accepted is no warning unless the profile says reject
// (it warned under ietf); a server folding key case replays one key's
// response to another, a SHOULD failure under ietf (key_case sensitive)
// with the two keys named (it was recorded as a skip), accepted under
// key_case folded; one answering the profile's mismatch status to the
// lower-case spelling folds too.
func TestKeyProfileSettings(t *testing.T) {
	rows := []struct {
		name, mode, id string
		profile        func(*apispec.Profile)
		want           scenarios.Status
		observed       string
	}{
		{"blank accepted, ietf", "blank-ok", "syntax/empty-key", func(*apispec.Profile) {}, scenarios.Pass, "blank: 201"},
		{"blank accepted, blank_key reject", "blank-ok", "syntax/empty-key", func(p *apispec.Profile) { p.BlankKey = apispec.BlankReject }, scenarios.Warn, "blank: 201"},
		{"blank rejected, blank_key reject", "", "syntax/empty-key", func(p *apispec.Profile) { p.BlankKey = apispec.BlankReject }, scenarios.Pass, "blank: 400"},
		{"case folded, ietf", "fold", "scope/case-sensitive", func(*apispec.Profile) {}, scenarios.Warn, "two keys share one response"},
		{"case folded, key_case folded", "fold", "scope/case-sensitive", func(p *apispec.Profile) { p.KeyCase = apispec.KeyCaseFolded }, scenarios.Pass, "two keys share one response"},
		{"case sensitive, ietf", "", "scope/case-sensitive", func(*apispec.Profile) {}, scenarios.Pass, "a distinct key"},
		// The profile's mismatch status is about the upper-case key's
		// record, never a rejection of the lower-case key (it passed).
		{"case folded onto a mismatch, ietf", "fold-mismatch", "scope/case-sensitive", func(*apispec.Profile) {}, scenarios.Warn, "the profile's mismatch or in-flight answer"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(keyQuirks{next: app, mode: row.mode, seen: &keySet{}})
			defer func() { srv.Close(); app.Close() }()
			tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			p := ietf(t)
			row.profile(p)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{row.id + "@charges"}})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if r.Status != row.want || !strings.Contains(r.Observed, row.observed) {
				t.Errorf("%s: %s, observed %q (%s); want %s, observed containing %q", r.Name(), r.Status, r.Observed, r.Reason, row.want, row.observed)
			}
		})
	}
}

// TestMaySeenPasses: a MAY case that saw the behaviour passes, though the
// profile leaves it open (ietf: retry_after_on_409 and problem_json's
// docs link): the reference's "409 with Retry-After 1" showed as skipped.
func TestMaySeenPasses(t *testing.T) {
	tg := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := ietf(t)
	p.ProblemJSON = apispec.Unknown
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"concurrent/retry-after@charges", "problem/docs-link@charges"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		switch {
		case r.Status == scenarios.Inconclusive && strings.Contains(r.Reason, "overlap"):
			t.Logf("%s: %s (a stall): %s", r.Name(), r.Status, r.Reason)
		case r.Status != scenarios.Pass:
			t.Errorf("%s: %s, observed %q (%s); want pass: the behaviour was seen", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
}

// TestOtherEndpointNothingTells: two operations answering the same
// constant body, no id_pointer, and a counter that counts only the first:
// nothing can tell whether the second operation executed or replayed the
// first one's response, so scope/other-endpoint is unverifiable, naming
// why, never a fail.
func TestOtherEndpointNothingTells(t *testing.T) {
	var mu sync.Mutex
	a := 0
	mux := http.NewServeMux()
	for _, path := range []string{"/a", "/b"} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			if path == "/a" {
				mu.Lock()
				a++
				mu.Unlock()
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"status":"accepted"}`))
		})
	}
	mux.HandleFunc("GET /_effects", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, `{"a":%d}`, a)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "api.yaml")
	if err := os.WriteFile(cfg, []byte("base_url: "+srv.URL+`
key_syntax: raw
principals: [{name: a, headers: {X-User: a}}]
oracle: {url: /_effects, pointer: /a}
operations:
  - {name: a, method: POST, path: /a, body: {n: 1}}
  - {name: b, method: POST, path: /b, body: {n: 1}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, p, err := apispec.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"scope/other-endpoint@a"}})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Status != scenarios.Unverifiable || !strings.Contains(r.Reason, "does not count b's executions") {
		t.Errorf("%s: %s (%s), want unverifiable naming the blind oracle", r.Name(), r.Status, r.Reason)
	}
}

// TestCaseFoldWithMarker: with a downstream double and a marker, the
// lower-case spelling of a completed key carries the upper-case key's
// token, so the two requests are the same bytes but the key: a server that
// folds key case replays (a SHOULD failure under ietf). With a token of
// its own the body differed, the folding server answered 422, and the
// case passed it as "rejected".
func TestCaseFoldWithMarker(t *testing.T) {
	addr := testenv.FreeAddr(t)
	shop := knobless.New(knobless.Options{ProviderURL: "http://" + addr})
	srv := httptest.NewServer(keyQuirks{next: shop, mode: "fold"})
	defer func() { srv.Close(); _ = shop.Close() }()
	path := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(path, []byte(knobless.Config(srv.URL, addr, "{downstream: payments}")), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, p, err := apispec.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"scope/case-sensitive"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	if r := rep.Results[0]; r.Status != scenarios.Warn || !strings.Contains(r.Observed, "two keys share one response") {
		t.Errorf("%s against a server folding key case: %s, observed %q %s; want warn, the keys sharing one response", r.Name(), r.Status, r.Observed, r.Reason)
	}
}
