package variants

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// tokens maps bearer tokens to account names.
var tokens = map[string]string{"tok_alice": "alice", "tok_bob": "bob"}

// maxSleep bounds the slow knob so a request can never hang a test.
const maxSleep = 10 * time.Second

// tables are the two operations; each has its own id sequence and counter.
var tables = []string{"charges", "refunds"}

// API is the payments API: POST /api/{charges,refunds} behind the
// idempotency layer, GET /api/{table}/{id}, and the execution counters at
// GET /_effects (global: {"charges":N,"refunds":M}) and
// GET /_effects?key=K ({"executions":N}, handler runs under key K).
type API struct {
	c    Choices
	idem *layer
	mux  *http.ServeMux

	mu     sync.Mutex
	runs   map[string]int            // handler runs per table
	perKey map[string]int            // handler runs per idempotency key
	seq    map[string]int            // last integer id per table (IntIDs)
	items  map[string]map[string]any // table + "/" + id -> resource
}

// New returns the API with the given deviations from the correct core.
func New(c Choices) *API {
	a := &API{c: c, idem: newLayer(c), mux: http.NewServeMux(),
		runs: map[string]int{}, perKey: map[string]int{}, seq: map[string]int{}, items: map[string]map[string]any{}}
	for _, table := range tables {
		a.mux.HandleFunc("POST /api/"+table, a.create(table))
		a.mux.HandleFunc("GET /api/"+table+"/{id}", a.get(table))
	}
	a.mux.HandleFunc("GET /_effects", a.effects)
	return a
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// payment is the request body plus the test knobs.
type payment struct {
	Amount   int    `json:"amount"`
	Currency string `json:"currency"`
	Note     string `json:"note,omitempty"`
	// SleepMS keeps the request in flight (the "slow" variant).
	SleepMS int `json:"sleep_ms,omitempty"`
	// Simulate "decline" answers 402 (an outcome the key keeps) and
	// "outage" 503 (which the key forgets).
	Simulate string `json:"simulate,omitempty"`
}

func user(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || h[:len(prefix)] != prefix {
		return "", false
	}
	u, ok := tokens[h[len(prefix):]]
	return u, ok
}

// create authenticates and validates before the idempotency layer, so a
// 401 or an invalid body never records the key.
func (a *API) create(table string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := user(r)
		if !ok {
			a.c.fail(w, http.StatusUnauthorized, "unauthenticated", "send Authorization: Bearer <token>")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			a.c.fail(w, http.StatusRequestEntityTooLarge, "body_too_large", "the body is over 1 MiB or was cut short")
			return
		}
		var p payment
		if err := json.Unmarshal(body, &p); err != nil || p.Amount <= 0 || p.Currency == "" {
			a.c.fail(w, http.StatusBadRequest, "invalid_request", "want {\"amount\": positive integer, \"currency\": string}")
			return
		}
		a.idem.serve(w, r, u, body, func(w http.ResponseWriter, key string) { a.execute(w, table, key, p) })
	}
}

// execute is the handler the key protects: it counts itself, then
// creates the resource.
func (a *API) execute(w http.ResponseWriter, table, key string, p payment) {
	a.mu.Lock()
	a.runs[table]++
	if key != "" {
		a.perKey[key]++
	}
	a.mu.Unlock()
	if p.SleepMS > 0 {
		time.Sleep(min(time.Duration(p.SleepMS)*time.Millisecond, maxSleep))
	}
	switch p.Simulate {
	case "decline":
		a.c.fail(w, http.StatusPaymentRequired, "card_declined", "the payment was declined")
		return
	case "outage":
		a.c.fail(w, http.StatusServiceUnavailable, "unavailable", "try again later")
		return
	}
	a.mu.Lock()
	var id any
	if a.c.IntIDs {
		a.seq[table]++
		id = a.seq[table]
	} else {
		id = fmt.Sprintf("%s_%s", table[:2], randomHex())
	}
	item := map[string]any{"id": id, "object": table[:len(table)-1], "amount": p.Amount, "currency": p.Currency, "status": "succeeded"}
	a.items[fmt.Sprintf("%s/%v", table, id)] = item
	a.mu.Unlock()
	w.Header().Set("Location", fmt.Sprintf("/api/%s/%v", table, id))
	writeJSON(w, http.StatusCreated, item)
}

func (a *API) get(table string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := user(r); !ok {
			a.c.fail(w, http.StatusUnauthorized, "unauthenticated", "send Authorization: Bearer <token>")
			return
		}
		a.mu.Lock()
		item, ok := a.items[table+"/"+r.PathValue("id")]
		a.mu.Unlock()
		if !ok {
			a.c.fail(w, http.StatusNotFound, "not_found", "no such "+table[:len(table)-1])
			return
		}
		writeJSON(w, http.StatusOK, item)
	}
}

// effects is the execution oracle: handler runs per table, or per key
// when ?key= is given. It needs no authentication (an internal endpoint).
func (a *API) effects(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.URL.Query().Has("key") {
		writeJSON(w, http.StatusOK, map[string]int{"executions": a.perKey[r.URL.Query().Get("key")]})
		return
	}
	out := map[string]int{}
	for _, t := range tables {
		out[t] = a.runs[t]
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail writes an error: RFC 9457 problem+json by default, or Stripe's
// plain JSON {"error":{"type","message","doc_url"}} (Choices.StripeErrors).
// Both link to documentation, as the draft asks of idempotency errors.
func (c Choices) fail(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Cache-Control", "no-store")
	if c.StripeErrors {
		writeJSON(w, status, map[string]any{"error": map[string]any{
			"type": errorType(status), "code": code, "message": detail,
			"doc_url": "https://payments.example/docs/errors#" + code}})
		return
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "https://payments.example/problems/" + code, "title": http.StatusText(status),
		"status": status, "detail": detail})
}

// errorType is Stripe's error category for a status.
func errorType(status int) string {
	switch {
	case status == http.StatusPaymentRequired:
		return "card_error"
	case status == http.StatusConflict || status == http.StatusLocked || status == http.StatusUnprocessableEntity:
		return "idempotency_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}
