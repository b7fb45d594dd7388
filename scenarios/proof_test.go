package scenarios_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/internal/knobless"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// signalling answers keyed requests with the profile's mismatch or
// in-flight signal in front of the reference: "every" answers all but the
// first keyed request of each path (the run's reach check) with it,
// "per-key" every request under a key after its first, "truncate" cuts a
// key longer than max characters to max and answers a cut key whose
// prefix was seen with the signal (it fingerprints the key as sent).
type signalling struct {
	next   http.Handler
	mode   string
	status int
	max    int

	mu   sync.Mutex
	seen map[string]bool
}

func (s *signalling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lines, keyed := r.Header["Idempotency-Key"]
	if !keyed || s.mode == "" {
		s.next.ServeHTTP(w, r)
		return
	}
	k := strings.Join(lines, ",")
	id := map[string]string{"every": r.URL.Path, "per-key": k, "truncate": k}[s.mode]
	if s.mode == "truncate" && len(strings.Trim(k, `"`)) > s.max {
		id = `"` + strings.Trim(k, `"`)[:s.max] + `"`
		r.Header.Set("Idempotency-Key", id)
	}
	s.mu.Lock()
	seen := s.seen[id]
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
	s.mu.Unlock()
	if seen && (s.mode != "truncate" || id != k) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(`{"title":"the profile's signal"}`))
		return
	}
	s.next.ServeHTTP(w, r)
}

// startSignalling serves the reference behind a signalling front.
func startSignalling(t *testing.T, s *signalling, keySyntax apispec.KeySyntax) *apispec.Target {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: 2 * time.Second, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.next = app
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); app.Close() })
	tg, err := apispec.FromURL(srv.URL, 2*time.Second, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tg.KeySyntax = keySyntax
	return tg
}

// TestNoPassOnSignal holds issue 37's rule that an answer the profile
// names as its mismatch or in-flight signal proves nothing but that
// signal (Case.Proof). A server answering every keyed request after the
// first with the signal passes only cases that signal proves, or cases
// whose every request went without a key (the reference answers those);
// the named rules below hold it where a case mixes the signal with
// genuine answers, and hold that a correct server whose refusal shares
// the signal's status (Stripe: 400) still passes.
func TestNoPassOnSignal(t *testing.T) {
	proofs := map[string]scenarios.Proof{}
	for _, c := range scenarios.Catalog() {
		proofs[c.ID] = c.Proof
	}
	type row struct {
		rule    string
		profile string
		mode    string
		signal  string // "mismatch" or "in-flight": the profile's first status
		edit    func(*apispec.Profile)
		run     []string // nil: the whole catalog, judged by Proof
		want    []scenarios.Status
	}
	rows := []row{
		{rule: "every keyed answer the mismatch signal: only cases it proves pass (ietf, 422)", profile: "ietf", mode: "every", signal: "mismatch"},
		{rule: "every keyed answer the in-flight signal: only cases it proves pass (ietf, 409)", profile: "ietf", mode: "every", signal: "in-flight"},
		{rule: "every keyed answer the mismatch signal, which is also the invalid-key status: only cases it proves pass (stripe, 400)", profile: "stripe", mode: "every", signal: "mismatch"},
		{rule: "every keyed answer the in-flight signal: only cases it proves pass (lenient, 409)", profile: "lenient", mode: "every", signal: "in-flight"},
		{rule: "a retry answered with the mismatch signal is no replay to inspect", profile: "ietf", mode: "per-key", signal: "mismatch",
			run: []string{"replay/no-credentials@charges"}, want: []scenarios.Status{scenarios.Inconclusive}},
		{rule: "the mismatch signal to the unchanged retry after a crash does not proceed", profile: "ietf", mode: "per-key", signal: "mismatch",
			run: []string{"crash/handler-crash@charges"}, want: []scenarios.Status{scenarios.Warn, scenarios.Fail}},
		{rule: "the in-flight signal to a changed request after the original completed is no mismatch error", profile: "ietf", mode: "per-key", signal: "in-flight",
			run: []string{"mismatch/repeat-fails-again@charges", "mismatch/problem-link@charges"}, want: []scenarios.Status{scenarios.Inconclusive}},
		{rule: "a same-key burst answered only with the mismatch signal raced no claim: no fresh execution shown", profile: "ietf", mode: "per-key", signal: "mismatch",
			run: []string{"expiry/expired-key-burst@charges", "expiry/edge-burst@charges"}, want: []scenarios.Status{scenarios.Inconclusive}},
		{rule: "a same-key burst answered only with the in-flight signal raced no claim either", profile: "ietf", mode: "per-key", signal: "in-flight",
			run: []string{"expiry/expired-key-burst@charges", "expiry/edge-burst@charges"}, want: []scenarios.Status{scenarios.Inconclusive}},
		{rule: "a key one character too long that meets the shorter key's record is truncated, not refused", profile: "reference", mode: "truncate", signal: "mismatch",
			run: []string{"syntax/max-length@charges"}, want: []scenarios.Status{scenarios.Warn}},
		{rule: "a correct server refusing invalid keys with the status the profile also names for a mismatch passes", profile: "ietf", mode: "", signal: "mismatch",
			edit: func(p *apispec.Profile) { p.MismatchStatus, p.KeyMaxLen = apispec.Statuses{400}, 255 },
			run:  []string{"syntax/empty-key@charges", "syntax/malformed-sf-string@charges", "syntax/max-length@charges"}, want: []scenarios.Status{scenarios.Pass}},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			p, err := apispec.ProfileByName(r.profile)
			if err != nil {
				t.Fatal(err)
			}
			if r.edit != nil {
				r.edit(p)
			}
			statuses := p.MismatchStatus
			if r.signal == "in-flight" {
				statuses = p.InFlightStatus
			}
			s := &signalling{mode: r.mode, status: statuses[0], max: 255}
			tg := startSignalling(t, s, p.KeySyntax)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: r.run})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) == 0 {
				t.Fatal("no results")
			}
			admits := scenarios.ByMismatch
			if r.signal == "in-flight" {
				admits = scenarios.ByInFlight
			}
			for _, res := range rep.Results {
				switch {
				case r.run != nil && !slicesContains(r.want, res.Status):
					t.Errorf("%s: %s (%s %s), want one of %v", res.Name(), res.Status, res.Observed, res.Reason, r.want)
				case r.run == nil && res.Status == scenarios.Pass && proofs[res.ID]&admits == 0 && keyedExchange(res):
					t.Errorf("%s passed on a server answering every keyed request with the %s signal %d, which it does not take as proof (%s): %s", res.Name(), r.signal, s.status, proofs[res.ID], res.Observed)
				}
			}
		})
	}
}

func slicesContains(ss []scenarios.Status, s scenarios.Status) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// keyedExchange reports that a request of res carried a key.
func keyedExchange(res scenarios.Result) bool {
	for _, x := range res.Exchanges {
		if x.Request.Header.Get("Idempotency-Key") != "" || len(x.Request.Header.Values("Idempotency-Key")) > 0 {
			return true
		}
	}
	return false
}

// TestSameRequestSameBytes holds the rule that the marker never makes two
// requests a case means to be the same request differ: over the whole
// catalog, with a downstream double marking every request's body
// (/reference), two requests of one
// case whose keys are spellings of one key (equal, equal but for letter
// case or quotes, or one the other plus a character: truncation) and
// whose bodies are equal but for the marker carry the same bytes.
func TestSameRequestSameBytes(t *testing.T) {
	addr := testenv.FreeAddr(t)
	shop := knobless.New(knobless.Options{ProviderURL: "http://" + addr})
	srv := httptest.NewServer(shop)
	defer func() { srv.Close(); _ = shop.Close() }()
	path := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(path, []byte(knobless.Config(srv.URL, addr, "{downstream: payments}")), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, p, err := apispec.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	p.KeyMaxLen = 64
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, res := range rep.Results {
		xs := res.Exchanges
		for i := range xs {
			for j := i + 1; j < len(xs); j++ {
				a, b := xs[i].Request, xs[j].Request
				ka, kb := strings.Trim(a.Header.Get("Idempotency-Key"), `"`), strings.Trim(b.Header.Get("Idempotency-Key"), `"`)
				if ka == "" || kb == "" || a.Method != b.Method || a.URL != b.URL || !spellings(ka, kb) {
					continue
				}
				ma, ra := marked(t, a.Body)
				mb, rb := marked(t, b.Body)
				if !bytes.Equal(ra, rb) {
					continue // another request: a mutation
				}
				checked++
				if ma != mb {
					t.Errorf("%s: %q (key %s) and %q (key %s) are the same request but their markers differ: %s vs %s", res.Name(), xs[i].Label, ka, xs[j].Label, kb, a.Body, b.Body)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no two requests under spellings of one key: nothing checked")
	}
}

// spellings reports that a and b spell one key.
func spellings(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.EqualFold(a, b) || (len(b) == len(a)+1 && strings.HasPrefix(b, a))
}

// marked is body's knobless marker (/reference) and the rest of it, as
// compact JSON: two spellings of one JSON document give the same rest.
func marked(t *testing.T, body []byte) (string, []byte) {
	t.Helper()
	doc, err := jsonx.Decode(body)
	if err != nil {
		return "", body
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return "", body
	}
	marker, _ := m["reference"].(string)
	delete(m, "reference")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return marker, out
}
