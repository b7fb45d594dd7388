package demo

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// discard is a ResponseWriter that keeps nothing, so the benchmark
// measures the app's own work, not net/http's.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// rewound is a request body the loop rewinds, so that the benchmark itself
// allocates nothing per request.
type rewound struct{ *strings.Reader }

func (rewound) Close() error { return nil }

// BenchmarkAppReplay: the whole app (body bound, coding, routes, bearer,
// middleware) answering a replay of one stored charge, the request as
// `idemcheck load --mode hit` sends it: what `serve`'s hit path costs
// above the net/http floor.
func BenchmarkAppReplay(b *testing.B) {
	app, err := New(Options{KeyOptional: true})
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	const body = `{"amount":1000,"currency":"usd"}`
	r := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer alice")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", `"bench-replay"`)
	r.Header.Set("User-Agent", "idemcheck")
	first := httptest.NewRecorder()
	app.ServeHTTP(first, r)
	if first.Code != http.StatusCreated {
		b.Fatalf("first request: %d %s", first.Code, first.Body)
	}
	b.ReportAllocs()
	w := &discard{h: http.Header{}}
	rd := &rewound{strings.NewReader(body)}
	r.Body = rd
	for b.Loop() {
		rd.Reset(body)
		clear(w.h)
		app.ServeHTTP(w, r)
	}
	if w.h.Get("Idempotent-Replayed") != "true" {
		b.Fatalf("not a replay: %v", w.h)
	}
}
