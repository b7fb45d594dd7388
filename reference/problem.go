package reference

import (
	"encoding/json"
	"net/http"
)

// DefaultDocsURL is where the problem types of the reference middleware are
// documented; every problem's "type" is this URL plus a fragment.
const DefaultDocsURL = "https://github.com/idemcheck/idemcheck/blob/main/docs/reference.md"

// problemKind names each error the middleware answers itself.
type problemKind int

const (
	probMissingKey problemKind = iota
	probInvalidKey
	probMismatch
	probTombstone
	probMismatch409 // mismatch-as-409 defect
	probInFlight
	probTooLarge
	probUnavailable
	probPanic
	probCount
)

type problemSpec struct {
	slug, title, detail string
	status              int
}

var problemSpecs = [probCount]problemSpec{
	probMissingKey:  {"idempotency-key-missing", "Idempotency-Key is missing", "This operation requires an Idempotency-Key header.", http.StatusBadRequest},
	probInvalidKey:  {"idempotency-key-invalid", "Idempotency-Key is invalid", "Send exactly one Idempotency-Key field: an sf-string or token of 1 to 255 visible ASCII characters.", http.StatusBadRequest},
	probMismatch:    {"idempotency-key-reused", "Idempotency-Key reused with a different request", "This key was already used with a different payload; use a new key for a new request.", http.StatusUnprocessableEntity},
	probTombstone:   {"response-too-large", "Response too large to replay", "The request under this key completed, but its response was too large to keep; it is not executed again.", http.StatusRequestEntityTooLarge},
	probMismatch409: {"idempotency-key-reused", "Idempotency-Key reused with a different request", "This key was already used with a different payload; use a new key for a new request.", http.StatusConflict},
	probInFlight:    {"idempotency-key-in-flight", "A request with this Idempotency-Key is in progress", "Retry after the original request has completed.", http.StatusConflict},
	probTooLarge:    {"request-too-large", "Request body too large", "The request body exceeds the size limit.", http.StatusRequestEntityTooLarge},
	probUnavailable: {"idempotency-store-unavailable", "Idempotency store unavailable", "The request was not processed; retry later with the same key.", http.StatusServiceUnavailable},
	probPanic:       {"internal-error", "Internal error", "The request failed and nothing was recorded; retry with the same key.", http.StatusInternalServerError},
}

// problems holds each problem body, encoded once per middleware.
type problems [probCount][]byte

func newProblems(docs string) *problems {
	var p problems
	for k, s := range problemSpecs {
		b, err := json.Marshal(struct {
			Type   string `json:"type"`
			Title  string `json:"title"`
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}{docs + "#" + s.slug, s.title, s.status, s.detail})
		if err != nil {
			panic(err) // static strings always encode
		}
		p[k] = b
	}
	return &p
}

var (
	hvProblemJSON = []string{"application/problem+json"}
	hvNoStore     = []string{"no-store"}
	hvRetryAfter  = []string{"1"}
	hvTrue        = []string{"true"}
)

func (p *problems) write(w http.ResponseWriter, k problemKind) {
	h := w.Header()
	h["Content-Type"] = hvProblemJSON
	h["Cache-Control"] = hvNoStore
	if k == probInFlight || k == probUnavailable {
		h["Retry-After"] = hvRetryAfter
	}
	w.WriteHeader(problemSpecs[k].status)
	_, _ = w.Write(p[k])
}

// leakConflict is the conflict-leaks-stored defect's 422: the problem
// body with the stored response and the stored body's hash beside it, the
// "helpful" diff that tells whoever sends another payload what the key
// holds.
func (x *exchange) leakConflict(k problemKind, rec *Record) {
	var doc map[string]any
	_ = json.Unmarshal(x.m.problems[k], &doc) // encoded by newProblems
	doc["stored_response"] = string(rec.Response.Body)
	doc["stored_hash"] = rec.RawHash
	b, err := json.Marshal(doc)
	if err != nil {
		b = x.m.problems[k]
	}
	h := x.w.Header()
	h["Content-Type"] = hvProblemJSON
	h["Cache-Control"] = hvNoStore
	x.w.WriteHeader(problemSpecs[k].status)
	_, _ = x.w.Write(b)
}
