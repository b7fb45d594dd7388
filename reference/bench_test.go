package reference_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// chargeHandler does what a small create endpoint does: decode and check
// the JSON body, make an id, encode the resource. It is the "bare handler"
// the middleware's overhead is measured against.
func chargeHandler(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Amount      int64  `json:"amount"`
		Currency    string `json:"currency"`
		Description string `json:"description"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Amount <= 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	id := "ch_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	body, _ := json.Marshal(map[string]any{"id": id, "object": "charge", "amount": in.Amount, "currency": in.Currency, "description": in.Description})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/charges/"+id)
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

const benchBody = `{"amount":1000,"currency":"usd","description":"idemcheck"}`

// discard is a ResponseWriter that keeps nothing, so the benchmarks
// measure the server side only.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func benchRequest(key string) *http.Request {
	r := httptest.NewRequest("POST", "/v1/charges", strings.NewReader(benchBody))
	r.Header.Set("Authorization", "Bearer alice")
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	return r
}

// rewound is a request body the loop rewinds: the loop itself allocates
// nothing per request but a changed key's field line.
type rewound struct{ *strings.Reader }

func (rewound) Close() error { return nil }

func serveBench(b *testing.B, h http.Handler, key func(i int) string) {
	b.ReportAllocs()
	w := &discard{h: http.Header{}}
	body := &rewound{strings.NewReader(benchBody)}
	r := benchRequest("")
	r.Body = body
	last := ""
	for i := 0; b.Loop(); i++ {
		body.Reset(benchBody)
		if k := key(i); k != last {
			r.Header["Idempotency-Key"] = []string{k}
			last = k
		}
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// BenchmarkBareHandler: the handler alone.
func BenchmarkBareHandler(b *testing.B) {
	serveBench(b, http.HandlerFunc(chargeHandler), func(int) string { return "" })
}

// BenchmarkMiddlewareHit: every request replays one stored key.
func BenchmarkMiddlewareHit(b *testing.B) {
	s := memstore.New()
	defer s.Close()
	h := reference.Middleware(s)(http.HandlerFunc(chargeHandler))
	serveBench(b, h, func(int) string { return `"bench-hit"` })
}

// BenchmarkMiddlewareMiss: every request carries a fresh key, so it claims,
// runs the handler and stores the outcome.
func BenchmarkMiddlewareMiss(b *testing.B) {
	s := memstore.New()
	defer s.Close()
	h := reference.Middleware(s)(http.HandlerFunc(chargeHandler))
	serveBench(b, h, func(i int) string { return `"bench-miss-` + strconv.Itoa(i) + `"` })
}
