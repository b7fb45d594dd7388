package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// maxDelay bounds the delay_ms knob.
const maxDelay = 60 * time.Second

// maxPad bounds the pad_bytes knob: a response of up to 4 MiB.
const maxPad = 4 << 20

// binarySize is the length of a binary (format "binary") response.
const binarySize = 4 << 10

// downstreamTimeout is how long a "fail": "timeout" request waits for a
// downstream that never answers before the handler gives up with 504.
const downstreamTimeout = 200 * time.Millisecond

// createRequest is the body of POST /v1/charges and /v1/refunds.
type createRequest struct {
	Amount      *int64          `json:"amount"`
	Currency    string          `json:"currency"`
	Description string          `json:"description"`
	Metadata    json.RawMessage `json:"metadata"`
	DelayMS     int64           `json:"delay_ms"`
	Fail        string          `json:"fail"`
	// PadBytes adds a "padding" member of that many bytes to the
	// response (a large response); Format "binary" answers the created
	// resource as application/octet-stream bytes instead of JSON.
	PadBytes int64  `json:"pad_bytes"`
	Format   string `json:"format"`
}

func (c *createRequest) validate() string {
	switch {
	case c.Amount == nil || *c.Amount <= 0:
		return "amount must be a positive integer"
	case len(c.Currency) != 3 || strings.Trim(strings.ToLower(c.Currency), "abcdefghijklmnopqrstuvwxyz") != "":
		return "currency must be a 3-letter code"
	case c.DelayMS < 0 || c.DelayMS > maxDelay.Milliseconds():
		return "delay_ms must be between 0 and 60000"
	case c.Fail != "" && c.Fail != "decline" && c.Fail != "transient" && c.Fail != "crash" && c.Fail != "timeout":
		return `fail must be "decline", "transient", "crash" or "timeout"`
	case c.PadBytes < 0 || c.PadBytes > maxPad:
		return "pad_bytes must be between 0 and 4194304"
	case c.Format != "" && c.Format != "json" && c.Format != "binary":
		return `format must be "json" or "binary"`
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
		captured, msg := captureParam(op, r.URL.RawQuery)
		if msg != "" {
			reference.DoNotStore(r)
			writeProblem(w, http.StatusBadRequest, "invalid-request", "Invalid query", msg)
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
				a.effects.undo(key, op) // given up before any effect: not an execution
				writeProblem(w, http.StatusServiceUnavailable, "cancelled", "Request cancelled", "The client went away; nothing was charged.")
				return
			case <-t.C:
			}
		}
		switch in.Fail {
		case "decline":
			a.events.declined(r.Context(), key, Charge{Object: object, Principal: bearerUser(r), Amount: *in.Amount, Currency: strings.ToLower(in.Currency), IdempotencyKey: key})
			writeProblem(w, http.StatusPaymentRequired, "card-declined", "Card declined", "The card was declined; nothing was charged.")
			return
		case "transient":
			w.Header().Set("Retry-After", "1")
			writeProblem(w, http.StatusServiceUnavailable, "temporarily-unavailable", "Temporarily unavailable", "A transient failure; retry with the same key.")
			return
		case "crash":
			panic("demo: the handler crashed (fail: crash)")
		case "timeout":
			// A downstream that never answers, given up at the deadline.
			ctx, cancel := context.WithTimeout(r.Context(), downstreamTimeout)
			<-ctx.Done()
			cancel()
			writeProblem(w, http.StatusGatewayTimeout, "downstream-timeout", "Downstream timeout", "A downstream call did not answer in time; nothing was charged.")
			return
		}

		c := Charge{
			ID:             idPrefix + randomID(),
			Object:         object,
			Principal:      bearerUser(r),
			Amount:         *in.Amount,
			Currency:       strings.ToLower(in.Currency),
			Description:    in.Description,
			Captured:       captured,
			APIVersion:     strings.TrimSpace(r.Header.Get(apiVersionHeader)),
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
		a.events.emit(r.Context(), key, c)
		var body []byte
		var err error
		h := w.Header()
		switch {
		case in.Format == "binary":
			body = make([]byte, binarySize)
			_, _ = rand.Read(body) // never fails (Go 1.24+)
			h.Set("Content-Type", "application/octet-stream")
		case in.PadBytes > 0:
			body, err = json.Marshal(padded{c, padding(in.PadBytes)})
			h.Set("Content-Type", "application/json")
		default:
			body, err = json.Marshal(c)
			h.Set("Content-Type", "application/json")
		}
		if err != nil {
			writeProblem(w, http.StatusInternalServerError, "internal-error", "Internal error", "encoding the response failed")
			return
		}
		h.Set("Location", "/v1/"+op+"/"+c.ID)
		h.Set("ETag", `"`+c.ID+`"`)
		// A filename with a comma: a store that splits values at commas
		// breaks it (gofiber/fiber PR #4693).
		h.Set("Content-Disposition", `inline; filename="`+object+`, `+c.ID+`.json"`)
		// Two cookies, two lines (RFC 6265 forbids folding them): one of
		// this execution's, with an Expires date (its comma), and one every
		// answer sets. The middleware does not replay them: a replay hands
		// out no session (replay/no-credentials).
		h.Add("Set-Cookie", "last_"+object+"="+c.ID+"; Path=/; Expires="+time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)+"; HttpOnly; SameSite=Lax")
		h.Add("Set-Cookie", "idemcheck_demo=1; Path=/; SameSite=Lax")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}
}

// captureParam reads the query of POST /v1/{op}: a charge's capture
// parameter ("true", the default, or "false": authorise only) changes
// what the request does, as in payment APIs. Other parameters are
// ignored (they are still part of the request's identity).
func captureParam(op, rawQuery string) (*bool, string) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, "the query is not valid: " + err.Error()
	}
	if op != opCharges {
		return nil, ""
	}
	captured := true
	switch v := q["capture"]; {
	case len(v) == 0:
	case len(v) == 1 && v[0] == "true":
	case len(v) == 1 && v[0] == "false":
		captured = false
	default:
		return nil, `capture must be given once, "true" or "false"`
	}
	return &captured, ""
}

// padded is a created resource with a padding member (pad_bytes).
type padded struct {
	Charge
	Padding string `json:"padding"`
}

// padding is n bytes of a repeating alphabet: a cut or a shifted byte
// shows wherever it happens.
func padding(n int64) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[i%len(alphabet)]
	}
	return string(b)
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
