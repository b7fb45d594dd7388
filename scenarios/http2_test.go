package scenarios_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// startDemoH2C serves the reference app (with defects) on loopback in
// h2c only (HTTP/2 with prior knowledge; an HTTP/1.1 request is refused)
// and returns its Target speaking HTTP/2 only: a request that went out
// over HTTP/1.1 would show as a transport error.
func startDemoH2C(t testing.TB, defects ...string) *apispec.Target {
	t.Helper()
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease, Defects: defects})
	if err != nil {
		t.Fatalf("demo.New(%v): %v", defects, err)
	}
	srv := httptest.NewUnstartedServer(app)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(false)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	if slices.Contains(defects, string(reference.ExactKeySpelling)) {
		srv.Listener = reference.KeepFieldSpelling(srv.Config, srv.Listener)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	tg.HTTP2 = true
	return tg
}

// TestCatalogOverH2C: the whole catalog over HTTP/2 (h2c) against the
// correct reference verifies every MUST and fails nothing, and the report
// says HTTP/2; each defect of the matrix is caught over HTTP/2 by the
// cases that catch it over HTTP/1.1 (each row runs those cases only).
func TestCatalogOverH2C(t *testing.T) {
	type row struct {
		defect string
		ids    []string
		anyOf  bool
		strict bool
		p      *apispec.Profile
	}
	rows := []row{{p: lightBurst(referenceProfile(t), "")}}
	for _, m := range defectMatrix {
		if m.pending != "" || m.clean || m.events {
			continue // events rows need a broker: TestDefectMatrix runs them over HTTP/1.1
		}
		p := lightBurst(referenceProfile(t), m.defect)
		if m.blockForbidden {
			p.BlockOK = false
		}
		if m.noCache5xx {
			p.Cache5xx = apispec.No
		}
		r := row{defect: m.defect, ids: m.want, strict: m.strict, p: p}
		if m.anyOf != nil {
			r.ids, r.anyOf = m.anyOf, true
		}
		rows = append(rows, r)
	}
	targets := make([]*apispec.Target, len(rows))
	for i, r := range rows {
		if r.defect == "" {
			targets[i] = startDemoH2C(t)
		} else {
			targets[i] = startDemoH2C(t, r.defect)
		}
	}
	reps := make([]*scenarios.Report, len(rows))
	errs := make([]error, len(rows))
	concurrently(len(rows), matrixParallel, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		reps[i], errs[i] = scenarios.Run(ctx, targets[i], rows[i].p, scenarios.RunOptions{Run: rows[i].ids, Strict: rows[i].strict || rows[i].defect == ""})
	})
	for i, r := range rows {
		if errs[i] == nil {
			var ids []string // the correct build: every inconclusive instance
			if r.defect != "" {
				ids = r.ids
			}
			rerunInconclusive(t, r.defect, startDemoH2C, r.p, reps[i], ids)
		}
	}
	for i, r := range rows {
		name := r.defect
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("Run: %v", errs[i])
			}
			rep := reps[i]
			if rep.Protocol != "HTTP/2" {
				t.Errorf("report protocol %q, want HTTP/2", rep.Protocol)
			}
			if r.defect == "" {
				neverFalse(t, "", rep.Results)
				if c := rep.Conformance(); c.Must.Verified != c.Must.Total {
					t.Errorf("%d of %d MUST requirements verified over HTTP/2: %s %s", c.Must.Verified, c.Must.Total, c.Blocker, c.Why)
				}
				return
			}
			own, _ := caught(rep)
			if r.anyOf && !slices.ContainsFunc(r.ids, func(id string) bool { return slices.Contains(own, id) }) ||
				!r.anyOf && !slices.Equal(own, r.ids) {
				t.Errorf("over HTTP/2 caught by %v, want %v (anyOf %v)", own, r.ids, r.anyOf)
				for _, res := range rep.Results {
					t.Logf("%s: %s expected %q observed %q %s", res.Name(), res.Status, res.Expected, res.Observed, res.Reason)
				}
			}
		})
	}
}

// TestHTTP2OnlyBursts: against an h2c-only reference (no HTTP/1.1 at all)
// every same-key burst is synchronised on its last bytes over HTTP/2 and
// the correct build passes the whole catalog with no fail and no warn; a
// build that ignores the key over HTTP/2 (exact-key-spelling: every
// HTTP/2 field name is lower case) fails the burst on the executions seen,
// with advice that says the key was not honoured at all.
func TestHTTP2OnlyBursts(t *testing.T) {
	p := referenceProfile(t)
	good, ignoring := startDemoH2C(t), startDemoH2C(t, string(reference.ExactKeySpelling))
	var rep, bad *scenarios.Report
	var err, badErr error
	concurrently(2, 2, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		if i == 0 {
			rep, err = scenarios.Run(ctx, good, p, scenarios.RunOptions{Strict: true})
			return
		}
		bad, badErr = scenarios.Run(ctx, ignoring, p, scenarios.RunOptions{Run: []string{"concurrent/same-key-burst@charges"}})
	})
	if err != nil || badErr != nil {
		t.Fatalf("Run: %v, %v", err, badErr)
	}
	rerunInconclusive(t, "", startDemoH2C, p, rep, nil)
	neverFalse(t, "", rep.Results)
	if c := rep.Conformance(); c.Must.Verified != c.Must.Total {
		t.Errorf("%d of %d MUST requirements verified over h2c only: %s %s", c.Must.Verified, c.Must.Total, c.Blocker, c.Why)
	}
	for _, r := range rep.Results {
		if r.ID == "concurrent/same-key-burst" && r.Status == scenarios.Pass && !strings.Contains(r.Observed, "last-byte sync over HTTP/2") {
			t.Errorf("%s passed without an HTTP/2 last-byte burst: %s", r.Name(), r.Observed)
		}
	}
	if len(bad.Results) != 1 {
		t.Fatalf("%d results, want 1", len(bad.Results))
	}
	r := bad.Results[0]
	if r.Status != scenarios.Fail || !strings.Contains(r.Observed, "last-byte sync over HTTP/2") ||
		!strings.Contains(r.Observed, "every request of the burst executed") || strings.Contains(r.Observed, "claim the key atomically") {
		t.Errorf("a key-ignoring server over h2c: %s, observed %q %s; want a fail on every request executing, over HTTP/2", r.Status, r.Observed, r.Reason)
	}
}
