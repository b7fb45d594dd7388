package evidence

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestOracleURLs: how the probe's URL is made for one key and for totals.
func TestOracleURLs(t *testing.T) {
	tg := &apispec.Target{BaseURL: "http://127.0.0.1:9"}
	for _, c := range []struct {
		name, url, key, wantKey, wantTotals string
	}{
		{"reference contract", "/v1/effects?key={key}", "a b&c", "http://127.0.0.1:9/v1/effects?key=a+b%26c", "http://127.0.0.1:9/v1/effects"},
		{"other parameters stay", "/e?op=charges&key={key}", "k", "http://127.0.0.1:9/e?op=charges&key=k", "http://127.0.0.1:9/e?op=charges"},
		{"absolute URL", "https://oracle.test/e?k={key}", "k", "https://oracle.test/e?k=k", "https://oracle.test/e"},
		{"key in the path has no totals", "/e/{key}", "k", "http://127.0.0.1:9/e/k", ""},
		{"no key has no totals", "/e", "k", "http://127.0.0.1:9/e", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &apispec.Oracle{URL: c.url, Pointer: "/n"}
			if got := o.KeyURL(tg, c.key); got != c.wantKey {
				t.Errorf("KeyURL = %q, want %q", got, c.wantKey)
			}
			if got := o.TotalsURL(tg); got != c.wantTotals {
				t.Errorf("TotalsURL = %q, want %q", got, c.wantTotals)
			}
		})
	}
}

// TestOracleExecutions probes a real loopback server: the principal's
// headers are sent, the integer at the pointer is read, and every answer
// that is not a 200 with an integer there is an error naming why.
func TestOracleExecutions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ops" {
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		switch r.URL.Query().Get("key") {
		case "seven":
			_, _ = w.Write([]byte(`{"executions":{"n":7}}`))
		case "half":
			_, _ = w.Write([]byte(`{"executions":{"n":1.5}}`))
		case "text":
			_, _ = w.Write([]byte(`{"executions":{"n":"7"}}`))
		case "missing":
			_, _ = w.Write([]byte(`{"executions":{}}`))
		case "garbage":
			_, _ = w.Write([]byte(`<html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tg := &apispec.Target{BaseURL: srv.URL, Principals: []apispec.Principal{{Headers: map[string]string{"Authorization": "Bearer ops"}}}}
	o := &apispec.Oracle{URL: "/effects?key={key}", Pointer: "/executions/n"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := wire.NewClient(5 * time.Second)
	defer c.CloseIdleConnections()
	count := func(o *apispec.Oracle, key string) (int, error) {
		tg.Oracle = o
		ev, err := Open(context.Background(), tg, c, nil)
		if err != nil {
			return 0, err
		}
		defer ev.Close()
		return ev.Count(ctx, key, nil)
	}
	if n, err := count(o, "seven"); err != nil || n != 7 {
		t.Errorf("Executions(seven) = %d, %v; want 7", n, err)
	}
	for _, bad := range []struct{ key, want string }{
		{"half", "/executions/n: "},
		{"text", "is not a number or an array"},
		{"missing", "nothing at /executions/n"},
		{"garbage", "invalid character"},
		{"unknown", "status 404"},
	} {
		if n, err := count(o, bad.key); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("Executions(%s) = %d, %v; want an error with the URL and %q", bad.key, n, err, bad.want)
		}
	}
	noAuth := &apispec.Oracle{URL: o.URL, Pointer: o.Pointer, Principal: 1}
	if _, err := count(noAuth, "seven"); err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Errorf("out-of-range principal sends no headers: got %v, want status 401", err)
	}
}

// TestListCount: a list oracle counts an array's elements, only those whose
// member at where equals the key (as text) when asked for a key; a pointer
// at an array counts it; errors say where the array is.
func TestListCount(t *testing.T) {
	for _, c := range []struct {
		name string
		o    apispec.Oracle
		body string
		key  string
		want int
		err  string
	}{
		{"the body is the array, per key", apispec.Oracle{Count: &apispec.ListCount{Where: "/k"}}, `[{"k":"a"},{"k":"b"},{"k":"a"}]`, "a", 2, ""},
		{"the key's marker token", apispec.Oracle{Count: &apispec.ListCount{Where: "/k"}}, `[{"k":"idc_token"},{"k":"b"},{"k":"a"}]`, "a", 2, ""},
		{"the body is the array, total", apispec.Oracle{Count: &apispec.ListCount{Where: "/k"}}, `[{"k":"a"},{"k":"b"},{"k":"a"}]`, "", 3, ""},
		{"a number compared as text", apispec.Oracle{Count: &apispec.ListCount{Array: "/data", Where: "/ref/n"}}, `{"data":[{"ref":{"n":7}},{"ref":{}}]}`, "7", 1, ""},
		{"no where: the length", apispec.Oracle{Count: &apispec.ListCount{Array: "/data"}}, `{"data":[1,2,3]}`, "k", 3, ""},
		{"a pointer at an array", apispec.Oracle{Pointer: "/data"}, `{"data":[1,2]}`, "", 2, ""},
		{"a pointer past the array", apispec.Oracle{Pointer: "/data/length"}, `{"data":[1,2]}`, "", 0, "nothing at /data/length (/data is an array of 2: point at it to count its elements)"},
		{"a pointer into a top-level array", apispec.Oracle{Pointer: "/length"}, `[1,2]`, "", 0, `nothing at /length (the body is an array of 2: count it with count: {array: ""})`},
		{"not an array", apispec.Oracle{Count: &apispec.ListCount{Array: "/data"}}, `{"data":{"x":1}}`, "", 0, "count.array /data: not an array (members: x)"},
		{"nothing at the array", apispec.Oracle{Count: &apispec.ListCount{Array: "/items"}}, `{"data":[]}`, "", 0, "count.array /items: nothing there (members: data)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var match []string
			if c.key != "" {
				match = []string{c.key, "idc_token"} // the key or its marker token
			}
			n, err := parseCount(&c.o, http.StatusOK, []byte(c.body), match)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Errorf("got %d, %v; want error %q", n, err, c.err)
				}
				return
			}
			if err != nil || n != c.want {
				t.Errorf("got %d, %v; want %d", n, err, c.want)
			}
		})
	}
}
