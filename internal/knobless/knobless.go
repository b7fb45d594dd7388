package knobless

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// Options build a shop.
type Options struct {
	// ProviderURL is the payment provider's base URL; POST
	// {ProviderURL}/v1/payments charges.
	ProviderURL string
	// KeepsReference: the reference is not passed on to the provider (the
	// double then sees calls without a token).
	KeepsReference bool
	// ForwardsKey: the client's idempotency key goes on to the provider
	// as its Idempotency-Key (Stripe-style), so the double needs no marker.
	ForwardsKey bool
	// Effects serves GET /v1/effects?key=K, the executions per key (every
	// key's without ?key): a test knob, for comparing the double with an
	// HTTP oracle.
	Effects bool
	Defects []reference.Defect
}

// Shop is the API; Close releases its store and connections.
type Shop struct {
	http.Handler
	o       Options
	client  *http.Client
	store   *memstore.Store
	orders  atomic.Int64
	mu      sync.Mutex
	effects map[string]int
}

// New builds a shop.
func New(o Options) *Shop {
	s := &Shop{o: o, client: &http.Client{Timeout: 10 * time.Second}, store: memstore.New(), effects: map[string]int{}}
	user := func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") }
	api := reference.Middleware(s.store, reference.WithPrincipal(user), reference.WithDefects(o.Defects...))(http.HandlerFunc(s.create))
	mux := http.NewServeMux()
	mux.Handle("/v1/orders", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			answer(w, http.StatusUnauthorized, `{"error":"unauthenticated"}`)
			return
		}
		api.ServeHTTP(w, r)
	}))
	if o.Effects {
		mux.HandleFunc("GET /v1/effects", func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			n := s.effects[r.URL.Query().Get("key")]
			if !r.URL.Query().Has("key") { // every key's: a global counter
				n = 0
				for _, c := range s.effects {
					n += c
				}
			}
			s.mu.Unlock()
			answer(w, http.StatusOK, fmt.Sprintf(`{"executions":%d}`, n))
		})
	}
	s.Handler = mux
	return s
}

// Close releases the store and the provider connections.
func (s *Shop) Close() error {
	s.client.CloseIdleConnections()
	return s.store.Close()
}

func (s *Shop) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SKU       string `json:"sku"`
		Quantity  int    `json:"quantity"`
		Card      string `json:"card"`
		Reference string `json:"reference"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SKU == "" || in.Quantity <= 0 {
		reference.DoNotStore(r) // rejected before any effect
		answer(w, http.StatusBadRequest, `{"error":"invalid order"}`)
		return
	}
	if s.o.Effects {
		key, _ := reference.KeyFromContext(r.Context())
		s.mu.Lock()
		s.effects[key]++
		s.mu.Unlock()
	}
	charge := map[string]any{"amount": 1000 * in.Quantity, "card": in.Card, "reference": in.Reference}
	if s.o.KeepsReference {
		delete(charge, "reference")
	}
	payload, _ := json.Marshal(charge) // a map of plain values always marshals
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, s.o.ProviderURL+"/v1/payments", bytes.NewReader(payload))
	if err != nil {
		answer(w, http.StatusInternalServerError, `{"error":"bad provider URL"}`)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if key, ok := reference.KeyFromContext(r.Context()); ok && s.o.ForwardsKey {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		answer(w, http.StatusBadGateway, `{"error":"payment provider unreachable"}`)
		return
	}
	var paid struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&paid)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPaymentRequired:
		answer(w, http.StatusPaymentRequired, `{"error":"card_declined"}`)
	case resp.StatusCode >= 300:
		answer(w, http.StatusBadGateway, `{"error":"payment failed"}`)
	case paid.ID == "":
		// The order records the provider's payment id: a success without
		// one cannot be booked (a double answering {} makes every order 502).
		answer(w, http.StatusBadGateway, `{"error":"the payment provider answered no payment id"}`)
	default:
		answer(w, http.StatusCreated, fmt.Sprintf(`{"order_id":"ord_%d","payment":%q}`, s.orders.Add(1), paid.ID))
	}
}

func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// Config is the idemcheck config of a shop at base whose provider is the
// double at doubleAddr (host:port); oracle is the oracle: section's body
// (e.g. "{downstream: payments}").
func Config(base, doubleAddr, oracle string) string {
	return fmt.Sprintf(`base_url: %s
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
oracle: %s
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
`, base, doubleAddr, oracle)
}
