package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// knoblessShop is an orders API as teams write them: no delay or fail
// field, no effects endpoint. It charges a card at its payment provider
// (providerURL, the downstream double here), passing the order's
// reference on, and keeps idempotency in memory (the reference
// middleware, built with defects for the broken builds).
type knoblessShop struct {
	providerURL string
	client      *http.Client
	orders      atomic.Int64
	// keepsReference: the shop does not pass the order's reference on
	// (the double then sees calls without a token).
	keepsReference bool
}

func (s *knoblessShop) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SKU       string `json:"sku"`
		Quantity  int    `json:"quantity"`
		Card      string `json:"card"`
		Reference string `json:"reference"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SKU == "" || in.Quantity <= 0 {
		reference.DoNotStore(r) // rejected before any effect
		shopAnswer(w, http.StatusBadRequest, `{"error":"invalid order"}`)
		return
	}
	charge := map[string]any{"amount": 1000 * in.Quantity, "card": in.Card, "reference": in.Reference}
	if s.keepsReference {
		delete(charge, "reference")
	}
	payload, _ := json.Marshal(charge)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, s.providerURL+"/v1/payments", bytes.NewReader(payload))
	if err != nil {
		shopAnswer(w, http.StatusInternalServerError, `{"error":"bad provider URL"}`)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		shopAnswer(w, http.StatusBadGateway, `{"error":"payment provider unreachable"}`)
		return
	}
	var paid struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&paid)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPaymentRequired:
		shopAnswer(w, http.StatusPaymentRequired, `{"error":"card_declined"}`)
	case resp.StatusCode >= 300:
		shopAnswer(w, http.StatusBadGateway, `{"error":"payment failed"}`)
	default:
		shopAnswer(w, http.StatusCreated, fmt.Sprintf(`{"order_id":"ord_%d","payment":%q}`, s.orders.Add(1), paid.ID))
	}
}

func shopAnswer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// serveKnoblessShop starts the shop with the given defects; its provider
// is at providerURL.
func serveKnoblessShop(t *testing.T, providerURL string, defects ...reference.Defect) string {
	t.Helper()
	return serveShop(t, &knoblessShop{providerURL: providerURL}, defects...)
}

func serveShop(t *testing.T, shop *knoblessShop, defects ...reference.Defect) string {
	t.Helper()
	shop.client = &http.Client{Timeout: 10 * time.Second}
	user := func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") }
	store := memstore.New()
	api := reference.Middleware(store, reference.WithPrincipal(user), reference.WithDefects(defects...))(http.HandlerFunc(shop.create))
	mux := http.NewServeMux()
	mux.Handle("/v1/orders", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			shopAnswer(w, http.StatusUnauthorized, `{"error":"unauthenticated"}`)
			return
		}
		api.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		shop.client.CloseIdleConnections()
		_ = store.Close()
	})
	return srv.URL
}

// freeAddr is a loopback address nothing listens on (for the double,
// whose address the shop must know before the run starts it).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

const knoblessConfig = `base_url: %s
principals:
  - {name: alice, headers: {Authorization: Bearer alice}}
  - {name: bob, headers: {Authorization: Bearer bob}}
downstream:
  listen: %s
  routes:
    - name: payments
      method: POST
      path: /v1/payments
      response: {status: 200, body: {id: "pay_{seq}", status: succeeded}}
oracle:
  downstream: payments
operations:
  - name: orders
    method: POST
    path: /v1/orders
    body: {sku: abc, quantity: 1, card: "4242", reference: ""}
    marker: /reference
    id_pointer: /order_id
    mutations:
      - {name: changed-quantity, patch: {quantity: 2}}
    variants:
      slow: {downstream: {route: payments, delay: 1500ms}, duration: 1500ms}
      business_error: {downstream: {route: payments, status: 402, body: {error: card_declined}}, status: 402}
      transient_error: {downstream: {route: payments, status: 503}, status: 502}
`

// runKnobless runs the catalog (args select cases) against the shop
// through `idemcheck run` with the in-process double; it returns the
// results by case ID and the run's note lines.
func runKnobless(t *testing.T, cfg string, args ...string) (cliRun, map[string]runResult, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r, results := runReport(t, append([]string{"--config", path}, args...)...)
	byID := map[string]runResult{}
	for _, res := range results {
		byID[res.ID] = res
	}
	var notes []string
	for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.Contains(l, "note:") {
			notes = append(notes, l)
		}
	}
	return r, byID, notes
}

// TestDoubleRun: an API without knobs, its provider pointed at the
// double. The correct build passes every MUST on the double's per-key
// counts, the slow variant made slow by the double; a build that executes
// a key twice is caught.
func TestDoubleRun(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		addr := freeAddr(t)
		base := serveKnoblessShop(t, "http://"+addr)
		r, res, notes := runKnobless(t, fmt.Sprintf(knoblessConfig, base, addr))
		if r.code != exitOK {
			for id, x := range res {
				if x.Status != "pass" && x.Status != "skip" {
					t.Logf("%s: %s %s %s", id, x.Status, x.Observed, x.Reason)
				}
			}
			t.Fatalf("exit %d, want 0; notes %q; stderr %s", r.code, notes, r.stderr)
		}
		if len(notes) != 0 {
			t.Errorf("notes %q: want none (every call holds its key's token)", notes)
		}
		// Each needs the double: a provider call it held (slow), failed
		// (business, transient) or counted without a key.
		for id, observed := range map[string]string{
			"concurrent/in-flight-conflict": "1 executions (oracle)",
			"concurrent/same-key-burst":     "1 executions (oracle)",
			"errors/business-error-kept":    "402, retry 402",
			"errors/failure-releases-key":   "2 executions (oracle)",
			"missing/rejected":              "no execution (oracle)",
		} {
			if x := res[id]; x.Status != "pass" || !strings.Contains(x.Observed, observed) {
				t.Errorf("%s: %s %q, want pass with %q", id, x.Status, x.Observed, observed)
			}
		}
	})
	t.Run("executes-twice", func(t *testing.T) {
		addr := freeAddr(t)
		base := serveKnoblessShop(t, "http://"+addr, reference.NoInflightLock)
		r, res, _ := runKnobless(t, fmt.Sprintf(knoblessConfig, base, addr), "--run", "concurrent/**")
		if r.code != exitFail {
			t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
		}
		x := res["concurrent/same-key-burst"]
		if x.Status != "fail" {
			t.Errorf("concurrent/same-key-burst: %+v, want fail", x)
		}
		// The evidence times the key's provider calls.
		if !strings.Contains(r.stdout, "downstream payments: ") || !strings.Contains(r.stdout, " calls for key …") {
			t.Errorf("no downstream evidence in the failures:\n%s", r.stdout)
		}
	})
}

// TestDoubleCalibration: calibration says what it saw when the calls do
// not hold the key's token: none at all (the API's provider URL is not
// the double), or calls without it (counted globally, the run serial).
func TestDoubleCalibration(t *testing.T) {
	t.Run("untokened", func(t *testing.T) {
		addr := freeAddr(t)
		base := serveShop(t, &knoblessShop{providerURL: "http://" + addr, keepsReference: true})
		r, res, notes := runKnobless(t, fmt.Sprintf(knoblessConfig, base, addr), "--run", "replay/single-execution", "--run", "concurrent/same-key-burst")
		if len(notes) != 1 || !strings.Contains(notes[0], "holds no token") || !strings.Contains(notes[0], "the run is serial") {
			t.Errorf("notes %q: want one saying the calls hold no token and the run is serial", notes)
		}
		for _, id := range []string{"replay/single-execution", "concurrent/same-key-burst"} {
			if x := res[id]; x.Status != "pass" || !strings.Contains(x.Observed, "(oracle)") {
				t.Errorf("%s: %+v, want pass on the global count", id, x)
			}
		}
		if r.code != exitOK {
			t.Errorf("exit %d, want 0; stderr %s", r.code, r.stderr)
		}
	})
	t.Run("not-pointed", func(t *testing.T) {
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			shopAnswer(w, http.StatusOK, `{"id":"pay_x"}`)
		}))
		defer elsewhere.Close()
		addr := freeAddr(t)
		base := serveKnoblessShop(t, elsewhere.URL)
		_, res, notes := runKnobless(t, fmt.Sprintf(knoblessConfig, base, addr), "--run", "replay/single-execution")
		if len(notes) != 1 || !strings.Contains(notes[0], "made no call to the double at http://"+addr) {
			t.Errorf("notes %q: want one saying no call reached the double", notes)
		}
		if x := res["replay/single-execution"]; x.Status != "inconclusive" {
			t.Errorf("replay/single-execution: %+v, want inconclusive", x)
		}
	})
}
