package load_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
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

// TestHandBuiltTargetKeyField: a Target a program builds by hand, with no
// key_header and no timeout, gets the config's defaults: every keyed
// request carries Idempotency-Key (the draft's field), none a key under
// an empty or another name. make bench broke this way once (benchrunner).
func TestHandBuiltTargetKeyField(t *testing.T) {
	app := demotest.App(t, demo.Options{})
	var keyed, other atomic.Int64
	base := demotest.ServeOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name := range r.Header {
			if strings.Contains(strings.ToLower(name), "key") && name != "Idempotency-Key" {
				other.Add(1)
			}
		}
		if r.Header.Get("Idempotency-Key") != "" {
			keyed.Add(1)
		}
		app.ServeHTTP(w, r)
	}), "127.0.0.1:0")
	ref, err := apispec.FromURL(base, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	tg := &apispec.Target{BaseURL: base, Principals: ref.Principals, Operations: ref.Operations[:1]}
	rep, err := load.Run(context.Background(), tg, load.WithMode(load.ModeHit), load.WithPool(5), load.WithPlan(plan(t, "50@200ms")))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Paths[load.Hit] == nil || rep.Paths[load.Hit].Requests == 0 || rep.Violations != 0 {
		t.Fatalf("paths %s, violations %d: want a clean hit run", pathSummary(rep), rep.Violations)
	}
	if keyed.Load() < 5 || other.Load() != 0 {
		t.Fatalf("%d requests with Idempotency-Key, %d with a key field of another name", keyed.Load(), other.Load())
	}
	if tg.KeyHeader != "" || tg.Timeout != 0 {
		t.Errorf("the caller's Target was changed: key_header %q, timeout %s", tg.KeyHeader, tg.Timeout)
	}
}
