package scenarios_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// rewriteErrors re-dresses the reference's 4xx answers the way other
// servers write them: plain JSON without a type, optionally with a Link
// header, or a problem document whose status member is wrong.
func rewriteErrors(next http.Handler, style string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The bodies it rewrites are sent uncoded: the inner app must not
		// gzip them.
		r.Header.Del("Accept-Encoding")
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for h, v := range rec.Header() {
			w.Header()[h] = v
		}
		body := rec.Body.Bytes()
		if rec.Code >= 400 && rec.Code < 500 {
			switch style {
			case "wrong-status":
				body = []byte(`{"type":"https://docs.example/idempotency","title":"Idempotency error","status":500}`)
			case "doc-url":
				w.Header().Set("Content-Type", "application/json")
				body = []byte(`{"error":{"type":"idempotency_error","message":"key reused","doc_url":"https://docs.example/idempotency"}}`)
			default:
				w.Header().Set("Content-Type", "application/json")
				w.Header().Del("Cache-Control")
				body = []byte(`{"error":"idempotency error"}`)
			}
			switch style {
			case "link":
				w.Header().Set("Link", `<https://docs.example/idempotency>; rel="describedby"`)
			case "malformed-link":
				w.Header().Set("Link", `https://docs.example/idempotency; rel=describedby`)
			}
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func TestProblemFormats(t *testing.T) {
	rows := []struct {
		style string
		why   string
		want  map[string]scenarios.Status
	}{
		{"plain", "plain JSON errors link to no documentation (docs-link is a MAY and no-store an INFO: findings, never a warn or a pass)", map[string]scenarios.Status{
			"problem/problem-json": scenarios.Warn, "problem/docs-link": scenarios.Skip, "problem/no-store-stable-codes": scenarios.Skip}},
		{"link", "a Link rel=describedby satisfies the docs-link requirement instead of problem+json", map[string]scenarios.Status{
			"problem/problem-json": scenarios.Pass, "problem/docs-link": scenarios.Pass, "problem/no-store-stable-codes": scenarios.Skip}},
		{"malformed-link", "a Link without <...> is not a link", map[string]scenarios.Status{
			"problem/problem-json": scenarios.Warn, "problem/docs-link": scenarios.Skip, "problem/no-store-stable-codes": scenarios.Skip}},
		{"doc-url", "a plain JSON body linking its docs (Stripe's doc_url) meets the draft's SHOULD: a body containing a link to documentation; problem+json is only the draft's example", map[string]scenarios.Status{
			"problem/problem-json": scenarios.Pass, "problem/docs-link": scenarios.Pass, "problem/no-store-stable-codes": scenarios.Pass}},
		{"wrong-status", "a problem whose status member differs from the HTTP status is malformed, though it still links its docs", map[string]scenarios.Status{
			"problem/problem-json": scenarios.Warn, "problem/docs-link": scenarios.Pass, "problem/no-store-stable-codes": scenarios.Pass}},
	}
	for _, row := range rows {
		t.Run(row.style, func(t *testing.T) {
			t.Parallel()
			app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(rewriteErrors(app, row.style))
			defer func() { srv.Close(); app.Close() }()
			tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"problem/**"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 6 {
				t.Fatalf("%d results, want 6", len(rep.Results))
			}
			for _, r := range rep.Results {
				if want := row.want[r.ID]; r.Status != want {
					t.Errorf("%s: %s, want %s (%s): expected %q, observed %q %s", r.Name(), r.Status, want, row.why, r.Expected, r.Observed, r.Reason)
				}
			}
		})
	}
}
