package demo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// maxDelay bounds the delay_ms knob.
const maxDelay = 60 * time.Second

// createRequest is the body of POST /v1/charges and /v1/refunds.
type createRequest struct {
	Amount      *int64          `json:"amount"`
	Currency    string          `json:"currency"`
	Description string          `json:"description"`
	Metadata    json.RawMessage `json:"metadata"`
	DelayMS     int64           `json:"delay_ms"`
	Fail        string          `json:"fail"`
}

func (c *createRequest) validate() string {
	switch {
	case c.Amount == nil || *c.Amount <= 0:
		return "amount must be a positive integer"
	case len(c.Currency) != 3 || strings.Trim(strings.ToLower(c.Currency), "abcdefghijklmnopqrstuvwxyz") != "":
		return "currency must be a 3-letter code"
	case c.DelayMS < 0 || c.DelayMS > maxDelay.Milliseconds():
		return "delay_ms must be between 0 and 60000"
	case c.Fail != "" && c.Fail != "decline" && c.Fail != "transient":
		return `fail must be "decline" or "transient"`
	case len(c.Metadata) > 0 && c.Metadata[0] != '{':
		return "metadata must be an object"
	}
	return ""
}

// create handles POST /v1/{op}.
func (a *App) create(op, idPrefix, object string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in createRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			// Rejected before any effect: nothing worth remembering.
			reference.DoNotStore(r)
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeProblem(w, http.StatusRequestEntityTooLarge, "request-too-large", "Request body too large", "The request body exceeds the size limit.")
				return
			}
			writeProblem(w, http.StatusBadRequest, "invalid-request", "Invalid request body", err.Error())
			return
		}
		if msg := in.validate(); msg != "" {
			reference.DoNotStore(r)
			writeProblem(w, http.StatusBadRequest, "invalid-request", "Invalid request body", msg)
			return
		}

		key := effectKey(r)
		defer a.effects.record(key, op)()
		w, tracked := trackExecution(w, r, key, op)
		defer tracked()
		if in.DelayMS > 0 {
			t := time.NewTimer(time.Duration(in.DelayMS) * time.Millisecond)
			select {
			case <-r.Context().Done():
				t.Stop()
				writeProblem(w, http.StatusServiceUnavailable, "cancelled", "Request cancelled", "The client went away; nothing was charged.")
				return
			case <-t.C:
			}
		}
		switch in.Fail {
		case "decline":
			writeProblem(w, http.StatusPaymentRequired, "card-declined", "Card declined", "The card was declined; nothing was charged.")
			return
		case "transient":
			w.Header().Set("Retry-After", "1")
			writeProblem(w, http.StatusServiceUnavailable, "temporarily-unavailable", "Temporarily unavailable", "A transient failure; retry with the same key.")
			return
		}

		c := Charge{
			ID:             idPrefix + randomID(),
			Object:         object,
			Principal:      bearerUser(r),
			Amount:         *in.Amount,
			Currency:       strings.ToLower(in.Currency),
			Description:    in.Description,
			IdempotencyKey: effectKey(r),
			Created:        time.Now().UTC(),
		}
		if err := a.ledger.Insert(r.Context(), c); err != nil {
			if a.undoable { // the charge's transaction is gone: no effect
				a.effects.undo(key, op)
			}
			writeProblem(w, http.StatusServiceUnavailable, "ledger-unavailable", "Ledger unavailable", "The charge was not recorded; retry with the same key.")
			return
		}
		body, err := json.Marshal(c)
		if err != nil {
			writeProblem(w, http.StatusInternalServerError, "internal-error", "Internal error", "encoding the response failed")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Location", "/v1/"+op+"/"+c.ID)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}
}

// get handles GET /v1/{op}/{id}: only the owner sees a resource.
func (a *App) get(object string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok, err := a.ledger.Get(r.Context(), bearerUser(r), r.PathValue("id"))
		switch {
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, "ledger-unavailable", "Ledger unavailable", "Retry later.")
			return
		case !ok || c.Object != object:
			writeProblem(w, http.StatusNotFound, "not-found", "Not found", "No such "+object+".")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
	}
}

// effectKey is the key an execution is counted under: the one the
// middleware parsed, or, when it parsed none (defects, key optional), the
// raw field with its quotes stripped.
func effectKey(r *http.Request) string {
	if k, ok := reference.KeyFromContext(r.Context()); ok {
		return k
	}
	v := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
