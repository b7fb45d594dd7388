package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/reference/demo"
)

// TestFloorAnswersAsTheReference: the floor writes what the reference's
// replay writes (status, the same header fields, a body of the same
// size), so `make bench`'s replay-against-floor ratio compares the
// reference's work with no less output than it must send. When the
// reference's replay changes shape, this fails until the floor follows.
// The charge's "created" is RFC 3339 with trailing zeros of the
// nanoseconds dropped, so its length varies by run: it is compared as
// one placeholder.
var created = regexp.MustCompile(`"created":"[^"]*"`)

func TestFloorAnswersAsTheReference(t *testing.T) {
	app, err := demo.New(demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	ref := httptest.NewServer(app)
	defer ref.Close()
	fl := httptest.NewServer(http.HandlerFunc(floor))
	defer fl.Close()
	send := func(u string) (int, []string, int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, u+"/v1/charges", strings.NewReader(`{"amount":1000,"currency":"usd"}`))
		req.Header.Set("Authorization", "Bearer bench")
		req.Header.Set("Idempotency-Key", `"floor-shape"`)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var names []string
		for k := range resp.Header {
			if k != "Date" && k != "Content-Length" { // net/http's own; the size is compared
				names = append(names, k)
			}
		}
		slices.Sort(names)
		return resp.StatusCode, names, len(created.ReplaceAll(b, []byte(`"created":""`)))
	}
	send(ref.URL) // the execution
	rs, rh, rn := send(ref.URL)
	fs, fh, fn := send(fl.URL)
	if rs != fs || !slices.Equal(rh, fh) || rn != fn {
		t.Fatalf("the reference replays %d %v and %d body bytes; the floor answers %d %v and %d bytes", rs, rh, rn, fs, fh, fn)
	}
}
