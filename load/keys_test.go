package load_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/load"
	"github.com/idemcheck/idemcheck/reference/demo"
)

var bareUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestKeyGen: an API that accepts only bare UUIDs answers 500 to load's
// default ik-<hex>-<n> keys; a generator that obeys the API's key format
// (load.WithKeyGen, where a profile's key_format generator plugs in) gets
// a clean run.
func TestKeyGen(t *testing.T) {
	app := demotest.App(t, demo.Options{})
	base := demotest.ServeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k := r.Header.Get("Idempotency-Key"); k != "" && !bareUUID.MatchString(strings.Trim(k, `"`)) {
			http.Error(w, "key is not a UUID", http.StatusInternalServerError)
			return
		}
		app.ServeHTTP(w, r)
	}), "127.0.0.1:0")
	tg, err := apispec.FromURL(base, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		opts        []load.Option
		healthy     bool
		explanation string
	}{
		{"default", nil, false, "ik-<hex>-<n> keys: every miss answers 500"},
		{"uuid", []load.Option{load.WithKeyGen(apispec.UUIDKeys)}, true, "UUID keys obey the API's format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := load.Run(context.Background(), tg, append(tc.opts, load.WithMode(load.ModeMiss), load.WithPlan(plan(t, "100@300ms")))...)
			if err != nil {
				t.Fatal(err)
			}
			rep.CheckHealth(load.DefaultMaxErrorShare)
			if healthy := len(rep.Failures) == 0 && rep.Violations == 0; healthy != tc.healthy {
				t.Fatalf("%s: failures %+v, violations %d", tc.explanation, rep.Failures, rep.Violations)
			}
		})
	}
}
