package scenarios_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/scenarios"
)

// itemsAPI is a small API the reference app lacks the shape for: POST and
// PUT on one path, a PATCH operation and a GET of created items, behind
// the reference middleware. Its bugs are switched on per test row.
type itemsAPI struct {
	mu      sync.Mutex
	next    int
	items   map[string]map[string]any
	effects map[string]int
}

// count records an execution under the key the middleware parsed, or the
// raw field when the request bypassed the middleware.
func (a *itemsAPI) count(r *http.Request) {
	k, ok := reference.KeyFromContext(r.Context())
	if !ok {
		k = strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	}
	a.mu.Lock()
	a.effects[k]++
	a.mu.Unlock()
}

func (a *itemsAPI) create(w http.ResponseWriter, r *http.Request) {
	a.count(r)
	a.mu.Lock()
	a.next++
	id := fmt.Sprintf("it_%d", a.next)
	item := map[string]any{"id": id, "version": 1}
	a.items[id] = item
	a.mu.Unlock()
	w.Header().Set("Location", "/items/"+id)
	writeTestJSON(w, http.StatusCreated, item)
}

func (a *itemsAPI) patch(w http.ResponseWriter, r *http.Request) {
	a.count(r)
	a.mu.Lock()
	item := a.items["fixed"]
	item["version"] = item["version"].(int) + 1
	out := map[string]any{"id": "fixed", "version": item["version"]}
	a.mu.Unlock()
	writeTestJSON(w, http.StatusOK, out)
}

func (a *itemsAPI) get(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	item, ok := a.items[r.PathValue("id")]
	var out map[string]any
	if ok {
		out = map[string]any{"id": item["id"], "version": item["version"]}
	}
	a.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	writeTestJSON(w, http.StatusOK, out)
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// cacheGETByKey is a bug: a GET carrying a key is answered from a copy
// stored under that key.
func cacheGETByKey(next http.Handler) http.Handler {
	var mu sync.Mutex
	stored := map[string]*httptest.ResponseRecorder{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodGet || k == "" {
			next.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		rec, ok := stored[k]
		mu.Unlock()
		if !ok {
			rec = httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			mu.Lock()
			stored[k] = rec
			mu.Unlock()
		}
		for h, v := range rec.Header() {
			w.Header()[h] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

type itemsBugs struct {
	getCache, patchUnprotected bool
	defects                    []reference.Defect
}

func startItems(t *testing.T, bugs itemsBugs) *apispec.Target {
	t.Helper()
	a := &itemsAPI{items: map[string]map[string]any{"fixed": {"id": "fixed", "version": 1}}, effects: map[string]int{}}
	store := memstore.New()
	protect := reference.Middleware(store, reference.WithPrincipal(func(*http.Request) string { return "u" }), reference.WithDefects(bugs.defects...))
	api := http.NewServeMux()
	api.HandleFunc("POST /items", a.create)
	api.HandleFunc("PUT /items", a.create)
	api.HandleFunc("PATCH /items/fixed", a.patch)
	api.HandleFunc("GET /items/{id}", a.get)
	mux := http.NewServeMux()
	mux.Handle("/items", protect(api))
	mux.Handle("/items/", protect(api))
	if bugs.patchUnprotected {
		mux.Handle("PATCH /items/fixed", api)
	}
	mux.HandleFunc("GET /effects", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		n := a.effects[r.URL.Query().Get("key")]
		a.mu.Unlock()
		writeTestJSON(w, http.StatusOK, map[string]int{"executions": n})
	})
	var h http.Handler = mux
	if bugs.getCache {
		h = cacheGETByKey(mux)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); store.Close() })
	op := func(name, method, path string) apispec.Operation {
		return apispec.Operation{Name: name, Method: method, Path: path, Body: json.RawMessage(`{"name":"x"}`), IDPointer: "/id"}
	}
	return &apispec.Target{
		BaseURL: srv.URL, KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString, Timeout: 5 * time.Second,
		Principals: []apispec.Principal{{Name: "u"}},
		Operations: []apispec.Operation{op("create", "POST", "/items"), op("replace", "PUT", "/items"), op("patch", "PATCH", "/items/fixed")},
		Oracle:     &apispec.Oracle{URL: "/effects?key={key}", Pointer: "/executions"},
	}
}

// TestMethodAndOtherMethodScope: the METHOD family and scope/other-method
// need operation shapes the reference app does not have (PATCH, two
// methods on one path, GET of created resources).
func TestMethodAndOtherMethodScope(t *testing.T) {
	rows := []struct {
		name string
		bugs itemsBugs
		// want maps instance names to their expected status; the other
		// selected instances must skip.
		want map[string]scenarios.Status
	}{
		{"correct", itemsBugs{}, map[string]scenarios.Status{
			"method/get-ignores-key@create": scenarios.Pass, "method/get-ignores-key@replace": scenarios.Pass,
			"method/patch-honours-key@patch": scenarios.Pass,
			"scope/other-method@create":      scenarios.Pass, "scope/other-method@replace": scenarios.Pass}},
		{"GET answered from a copy stored under the key", itemsBugs{getCache: true}, map[string]scenarios.Status{
			"method/get-ignores-key@create": scenarios.Warn, "method/get-ignores-key@replace": scenarios.Warn,
			"method/patch-honours-key@patch": scenarios.Pass,
			"scope/other-method@create":      scenarios.Pass, "scope/other-method@replace": scenarios.Pass}},
		{"PATCH outside the idempotency layer", itemsBugs{patchUnprotected: true}, map[string]scenarios.Status{
			"method/get-ignores-key@create": scenarios.Pass, "method/get-ignores-key@replace": scenarios.Pass,
			"method/patch-honours-key@patch": scenarios.Warn,
			"scope/other-method@create":      scenarios.Pass, "scope/other-method@replace": scenarios.Pass}},
		{"method left out of the scope", itemsBugs{defects: []reference.Defect{reference.NoEndpointScope}}, map[string]scenarios.Status{
			"method/get-ignores-key@create": scenarios.Pass, "method/get-ignores-key@replace": scenarios.Pass,
			"method/patch-honours-key@patch": scenarios.Pass,
			"scope/other-method@create":      scenarios.Fail, "scope/other-method@replace": scenarios.Fail}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			tg := startItems(t, row.bugs)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"method/**", "scope/other-method"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				want, ok := row.want[r.Name()]
				if !ok {
					want = scenarios.Skip
				}
				if r.Status != want {
					t.Errorf("%s: %s, want %s (expected %q, observed %q %s)", r.Name(), r.Status, want, r.Expected, r.Observed, r.Reason)
				}
			}
			if len(rep.Results) != 9 {
				t.Errorf("%d results, want 9 (3 cases × 3 operations)", len(rep.Results))
			}
		})
	}
}
