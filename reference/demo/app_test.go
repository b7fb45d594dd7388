package demo

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestContract checks the reference app contract (DESIGN.md) end to end
// over loopback HTTP, one rule per row.
func TestContract(t *testing.T) {
	cases := []struct {
		name, rule string
		run        func(t *testing.T, h *harness)
	}{
		{"replay-byte-identical", "a retry after completion gets the stored status, headers and bytes, marked Idempotent-Replayed: true, without executing", func(t *testing.T, h *harness) {
			k := newKey()
			first := h.post("/v1/charges", "alice", `"`+k+`"`, chargeBody)
			again := h.post("/v1/charges", "alice", `"`+k+`"`, chargeBody)
			if first.status != 201 || again.status != 201 || first.body != again.body {
				t.Fatalf("first %d %q, replay %d %q", first.status, first.body, again.status, again.body)
			}
			if first.header.Get("Idempotent-Replayed") != "" || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("marker: first %q replay %q", first.header.Get("Idempotent-Replayed"), again.header.Get("Idempotent-Replayed"))
			}
			id, _ := first.json(t)["id"].(string)
			if !strings.HasPrefix(id, "ch_") || first.header.Get("Location") != "/v1/charges/"+id || again.header.Get("Location") != first.header.Get("Location") {
				t.Fatalf("id %q, Location %q / %q", id, first.header.Get("Location"), again.header.Get("Location"))
			}
			if n, _, _ := h.executions(k); n != 1 {
				t.Fatalf("executions = %d, want 1", n)
			}
		}},
		{"quoted-and-raw-one-key", `"abc" and abc are one key`, func(t *testing.T, h *harness) {
			k := newKey()
			a := h.post("/v1/charges", "alice", `"`+k+`"`, chargeBody)
			b := h.post("/v1/charges", "alice", k, chargeBody)
			if a.body != b.body || b.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("raw spelling did not replay: %d %q vs %d %q", a.status, a.body, b.status, b.body)
			}
		}},
		{"mismatch-422", "same key, changed amount: 422 problem, nothing runs, the original still replays", func(t *testing.T, h *harness) {
			k := newKey()
			first := h.post("/v1/charges", "alice", k, chargeBody)
			for range 2 { // the uncorrected retry fails again
				mm := h.post("/v1/charges", "alice", k, `{"amount":1001,"currency":"usd","description":"idemcheck"}`)
				if mm.status != 422 || mm.header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("mismatch: %d %s", mm.status, mm.header.Get("Content-Type"))
				}
			}
			if again := h.post("/v1/charges", "alice", k, chargeBody); again.body != first.body {
				t.Fatalf("original no longer replays: %d %q", again.status, again.body)
			}
			if n, _, _ := h.executions(k); n != 1 {
				t.Fatalf("executions = %d, want 1", n)
			}
		}},
		{"in-flight-409-then-replay", "a retry while the first runs gets 409 with Retry-After; after it completes, the replay", func(t *testing.T, h *harness) {
			k := newKey()
			slow := `{"amount":1000,"currency":"usd","delay_ms":1500}`
			done := make(chan reply, 1)
			go func() { done <- h.post("/v1/charges", "alice", k, slow) }()
			h.waitExecutions(k, 1)
			c := h.post("/v1/charges", "alice", k, slow)
			if c.status != 409 || c.header.Get("Retry-After") == "" || c.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("in flight: %d Retry-After=%q %s", c.status, c.header.Get("Retry-After"), c.header.Get("Content-Type"))
			}
			first := <-done
			again := h.post("/v1/charges", "alice", k, slow)
			if first.status != 201 || again.body != first.body {
				t.Fatalf("after completion: first %d, retry %d %q", first.status, again.status, again.body)
			}
		}},
		{"query-and-version-change-the-request", "?capture=false authorises only and Api-Version shows in the resource; under a used key either is a 422, and a bad capture value a 400 that is not stored", func(t *testing.T, h *harness) {
			k := newKey()
			auth := h.post("/v1/charges?capture=false", "alice", k, chargeBody)
			if auth.status != 201 || auth.json(t)["captured"] != false {
				t.Fatalf("authorise only: %d %q", auth.status, auth.body)
			}
			if r := h.post("/v1/charges?capture=true", "alice", k, chargeBody); r.status != 422 {
				t.Fatalf("same key, capture=true: %d %q", r.status, r.body)
			}
			if r := h.post("/v1/charges", "alice", newKey(), chargeBody); r.json(t)["captured"] != true || r.json(t)["api_version"] != nil {
				t.Fatalf("default charge: %q", r.body)
			}
			k2 := newKey()
			hdr := http.Header{"Authorization": {"Bearer alice"}, "Idempotency-Key": {k2}, "Api-Version": {"2024-06-01"}}
			v := h.do("POST", "/v1/charges", hdr, chargeBody)
			if v.status != 201 || v.json(t)["api_version"] != "2024-06-01" {
				t.Fatalf("Api-Version: %d %q", v.status, v.body)
			}
			hdr.Set("Api-Version", "2025-01-01")
			if r := h.do("POST", "/v1/charges", hdr, chargeBody); r.status != 422 {
				t.Fatalf("same key, another Api-Version: %d %q", r.status, r.body)
			}
			k3 := newKey()
			if r := h.post("/v1/charges?capture=maybe", "alice", k3, chargeBody); r.status != 400 {
				t.Fatalf("capture=maybe: %d", r.status)
			}
			if r := h.post("/v1/charges?capture=true", "alice", k3, chargeBody); r.status != 201 {
				t.Fatalf("corrected query under the same key: %d %q", r.status, r.body)
			}
			if r := h.post("/v1/refunds?capture=false", "alice", newKey(), chargeBody); r.status != 201 || r.json(t)["captured"] != nil {
				t.Fatalf("refund ignores capture: %d %q", r.status, r.body)
			}
		}},
		{"missing-key-400", "POST without a key: 400 problem+json with a type URI, nothing runs", func(t *testing.T, h *harness) {
			r := h.post("/v1/charges", "alice", "", chargeBody)
			if r.status != 400 || !strings.HasPrefix(r.json(t)["type"].(string), "https://") {
				t.Fatalf("got %d %q", r.status, r.body)
			}
			if n, _, _ := h.executions(""); n != 0 {
				t.Fatalf("total executions = %d, want 0", n)
			}
		}},
		{"auth-before-idempotency", "401 comes before any idempotency work; the key stays fresh", func(t *testing.T, h *harness) {
			k := newKey()
			if r := h.post("/v1/charges", "", k, chargeBody); r.status != 401 || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("no auth: %d %s", r.status, r.header.Get("Content-Type"))
			}
			if r := h.post("/v1/charges", "alice", k, chargeBody); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("after 401 the key was not fresh: %d", r.status)
			}
		}},
		{"scope-user-and-endpoint", "the same key from another user or on another endpoint executes fresh", func(t *testing.T, h *harness) {
			k := newKey()
			a := h.post("/v1/charges", "alice", k, chargeBody)
			b := h.post("/v1/charges", "bob", k, chargeBody)
			r := h.post("/v1/refunds", "alice", k, chargeBody)
			if a.body == b.body || b.status != 201 || r.status != 201 || r.json(t)["object"] != "refund" {
				t.Fatalf("alice %q, bob %d %q, refund %d %q", a.body, b.status, b.body, r.status, r.body)
			}
			if n, c, rf := h.executions(k); n != 3 || c != 2 || rf != 1 {
				t.Fatalf("executions %d (charges %d refunds %d), want 3 (2, 1)", n, c, rf)
			}
		}},
		{"decline-402-replays", "a business 4xx is stored: the retry replays 402 without executing", func(t *testing.T, h *harness) {
			k := newKey()
			body := `{"amount":1000,"currency":"usd","fail":"decline"}`
			a, b := h.post("/v1/charges", "alice", k, body), h.post("/v1/charges", "alice", k, body)
			if a.status != 402 || b.status != 402 || b.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("402: %d, retry %d replayed=%q", a.status, b.status, b.header.Get("Idempotent-Replayed"))
			}
			if n, _, _ := h.executions(k); n != 1 {
				t.Fatalf("executions = %d, want 1", n)
			}
		}},
		{"transient-503-re-executes", "a 5xx releases the key: the retry executes again", func(t *testing.T, h *harness) {
			k := newKey()
			body := `{"amount":1000,"currency":"usd","fail":"transient"}`
			a, b := h.post("/v1/charges", "alice", k, body), h.post("/v1/charges", "alice", k, body)
			if a.status != 503 || b.status != 503 || b.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("503: %d, retry %d", a.status, b.status)
			}
			if n, _, _ := h.executions(k); n != 2 {
				t.Fatalf("executions = %d, want 2", n)
			}
		}},
		{"invalid-400-not-stored", "a validation 400 is not stored: the corrected body with the same key executes", func(t *testing.T, h *harness) {
			k := newKey()
			if r := h.post("/v1/charges", "alice", k, `{"amount":"not-a-number","currency":"usd"}`); r.status != 400 || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("invalid: %d %s", r.status, r.header.Get("Content-Type"))
			}
			if r := h.post("/v1/charges", "alice", k, chargeBody); r.status != 201 {
				t.Fatalf("corrected: %d %q", r.status, r.body)
			}
		}},
		{"get-owner-only", "GET /v1/charges/{id} shows the owner's charge and 404s for anyone else", func(t *testing.T, h *harness) {
			id := h.post("/v1/charges", "alice", newKey(), chargeBody).json(t)["id"].(string)
			own := h.do("GET", "/v1/charges/"+id, http.Header{"Authorization": {"Bearer alice"}}, "")
			other := h.do("GET", "/v1/charges/"+id, http.Header{"Authorization": {"Bearer bob"}}, "")
			if own.status != 200 || own.json(t)["id"] != id || other.status != 404 {
				t.Fatalf("owner %d %q, other %d", own.status, own.body, other.status)
			}
		}},
		{"cancelled-delay-releases", "a client that hangs up during delay_ms ends the handler; nothing is stored, the retry executes", func(t *testing.T, h *harness) {
			k := newKey()
			body := `{"amount":1000,"currency":"usd","delay_ms":60000}`
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/v1/charges", strings.NewReader(body))
			req.Header = http.Header{"Authorization": {"Bearer alice"}, "Idempotency-Key": {k}}
			errc := make(chan error, 1)
			go func() {
				resp, err := h.client.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				errc <- err
			}()
			h.waitExecutions(k, 1)
			cancel()
			<-errc
			deadline := time.Now().Add(5 * time.Second)
			for {
				r := h.post("/v1/charges", "alice", k, `{"amount":1000,"currency":"usd","delay_ms":1}`)
				// A different body on purpose: 422 while the record exists,
				// 201 once the cancelled claim is released.
				if r.status == 201 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cancelled request left its record: retry still %d after 5s", r.status)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{"body-limit-413", "a body over MaxBody gets 413 problem+json", func(t *testing.T, h *harness) {
			big := `{"amount":1000,"currency":"usd","description":"` + strings.Repeat("x", 5000) + `"}`
			if r := h.post("/v1/charges", "alice", newKey(), big); r.status != 413 || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("got %d %s", r.status, r.header.Get("Content-Type"))
			}
		}},
		{"healthz-and-totals", "GET /healthz is 200; /v1/effects without key reports totals", func(t *testing.T, h *harness) {
			if r := h.do("GET", "/healthz", http.Header{}, ""); r.status != 200 {
				t.Fatalf("healthz %d", r.status)
			}
			h.post("/v1/refunds", "alice", newKey(), chargeBody)
			if n, _, rf := h.executions(""); n < 1 || rf < 1 {
				t.Fatalf("totals: %d executions, %d refunds", n, rf)
			}
		}},
	}
	// The same rules over HTTP/2 (h2c): the middleware behaves the same
	// whatever protocol carries the request.
	for _, h2c := range []bool{false, true} {
		proto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2c]
		for _, c := range cases {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarnessProto(t, Options{MaxBody: 4096}, h2c)
				if r := h.do("GET", "/healthz", http.Header{}, ""); r.proto != proto {
					t.Fatalf("served over %s, want %s", r.proto, proto)
				}
				c.run(t, h)
				if t.Failed() {
					t.Logf("rule: %s", c.rule)
				}
			})
		}
	}
}

func TestNewRejectsUnknownDefect(t *testing.T) {
	_, err := New(Options{Defects: []string{"no-such-bug"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-bug") {
		t.Fatalf("err = %v, want one naming the defect", err)
	}
}

func TestDefectDocCoversCatalog(t *testing.T) {
	names := DefectNames()
	// A floor, not a count: defects are added as families grow.
	if len(names) < 36 {
		t.Fatalf("catalog has %d defects, want at least 36", len(names))
	}
	for _, n := range names {
		if b, r, ok := DefectDoc(n); !ok || b == "" || r == "" {
			t.Errorf("defect %s: doc %q %q %v", n, b, r, ok)
		}
	}
}
