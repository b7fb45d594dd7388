package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// users maps API keys to account names.
var users = map[string]string{"key_alice": "alice", "key_bob": "bob"}

// maxSleep bounds the slow knob so a request can never hang a test.
const maxSleep = 10 * time.Second

// shop is the orders API: orders and payments, each behind the
// idempotency layer, plus an effects counter for the conformance suite.
type shop struct {
	idem *idempotent
	mux  *http.ServeMux

	mu     sync.Mutex
	runs   map[string]int            // handler executions per idempotency key
	orders map[string]map[string]any // uuid -> order, for GET
}

func newShop(ttl time.Duration) *shop {
	s := &shop{idem: newIdempotent(ttl), mux: http.NewServeMux(), runs: map[string]int{}, orders: map[string]map[string]any{}}
	s.mux.HandleFunc("POST /api/v2/orders", s.protected(s.createOrder))
	s.mux.HandleFunc("POST /api/v2/payments", s.protected(s.createPayment))
	s.mux.HandleFunc("GET /api/v2/orders/{uuid}", s.authenticated(s.getOrder))
	s.mux.HandleFunc("GET /internal/effects", s.authenticated(s.effects))
	return s
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// request is the common body: the endpoint's fields plus the test knobs.
type request struct {
	SKU         string `json:"sku"`
	Quantity    int    `json:"quantity"`
	AmountCents int    `json:"amount_cents"`
	Currency    string `json:"currency"`
	// SleepMS keeps the request in flight (the "slow" variant).
	SleepMS int `json:"sleep_ms"`
	// Decline makes the business reject the request with 402, an outcome
	// the key keeps.
	Decline bool `json:"decline"`
	// Unavailable makes the request fail with 503, which the key forgets.
	Unavailable bool `json:"unavailable"`
}

type handler func(w http.ResponseWriter, req request, key string)

// authenticated resolves X-Api-Key before anything else.
func (s *shop) authenticated(next func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := users[r.Header.Get("X-Api-Key")]; !ok {
			problem(w, http.StatusUnauthorized, "unauthenticated", "send a valid X-Api-Key")
			return
		}
		next(w, r)
	}
}

// protected authenticates, validates the body, then runs h under the
// idempotency layer. Validation comes first, so an invalid request never
// records its key and the corrected request can use it.
func (s *shop) protected(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, ok := users[r.Header.Get("X-Api-Key")]
		if !ok {
			problem(w, http.StatusUnauthorized, "unauthenticated", "send a valid X-Api-Key")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			problem(w, http.StatusRequestEntityTooLarge, "body-too-large", "the body is over 1 MiB")
			return
		}
		var req request
		if err := json.Unmarshal(body, &req); err != nil {
			problem(w, http.StatusBadRequest, "invalid-body", "the body is not a valid request: "+err.Error())
			return
		}
		s.idem.wrap(w, r, user, body, func(w http.ResponseWriter) {
			s.mu.Lock()
			s.runs[r.Header.Get(keyHeader)]++
			s.mu.Unlock()
			if req.SleepMS > 0 {
				time.Sleep(min(time.Duration(req.SleepMS)*time.Millisecond, maxSleep))
			}
			switch {
			case req.Unavailable:
				problem(w, http.StatusServiceUnavailable, "unavailable", "try again later")
			case req.Decline:
				problem(w, http.StatusPaymentRequired, "declined", "the request was declined")
			default:
				h(w, req, r.Header.Get(keyHeader))
			}
		})
	}
}

func (s *shop) createOrder(w http.ResponseWriter, req request, _ string) {
	order := map[string]any{"uuid": uuid.NewString(), "sku": req.SKU, "quantity": req.Quantity, "state": "placed"}
	s.mu.Lock()
	s.orders[order["uuid"].(string)] = order
	s.mu.Unlock()
	w.Header().Set("Location", "/api/v2/orders/"+order["uuid"].(string))
	writeJSON(w, http.StatusCreated, map[string]any{"order": order})
}

func (s *shop) createPayment(w http.ResponseWriter, req request, _ string) {
	writeJSON(w, http.StatusCreated, map[string]any{"payment": map[string]any{
		"uuid": uuid.NewString(), "amount_cents": req.AmountCents, "currency": req.Currency, "state": "captured"}})
}

func (s *shop) getOrder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	order, ok := s.orders[r.PathValue("uuid")]
	s.mu.Unlock()
	if !ok {
		problem(w, http.StatusNotFound, "not-found", "no such order")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"order": order})
}

// effects answers {"counts":{"handler_runs":N}}: how many times a handler
// ran for an idempotency key (any user, any endpoint).
func (s *shop) effects(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.runs[r.URL.Query().Get("idempotency_key")]
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"counts": map[string]int{"handler_runs": n}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// problem writes an RFC 9457 problem document.
func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":   fmt.Sprintf("https://orders.example/problems/%s", code),
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
}
