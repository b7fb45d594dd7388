package scenarios_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// listOracle is GET /orders as a per-key oracle: the orders whose
// idempotency_key is the key.
const listOracle = "oracle: {url: /orders, count: {array: /data, where: /idempotency_key}}\n"

// mustFails lists the MUST cases that failed.
func mustFails(rep *scenarios.Report) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Level == scenarios.Must && r.Status == scenarios.Fail {
			out = append(out, r.Name()+": "+r.Observed)
		}
	}
	return out
}

// TestListOracle: a list endpoint is an oracle. With where, per key: the
// correct orders API passes the effect-counting families on it, and the
// run stays concurrent. A pointer at the array is its length, a global
// count (serial). A pointer past the array says where the array is.
func TestListOracle(t *testing.T) {
	tg := startOrders(t, &ordersAPI{}, listOracle)
	if tg.GlobalOracle() {
		t.Fatal("count.where makes the list a per-key oracle")
	}
	passesOnOracle(t, tg)

	global := startOrders(t, &ordersAPI{}, "oracle: {url: /orders, pointer: /data}\n")
	if !global.GlobalOracle() {
		t.Fatal("an array's length is a global count")
	}
	rep := runSelected(t, global, ietf(t), "replay/single-execution", "mismatch/original-survives")
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass {
			t.Errorf("global list: %s: %s: %q %s", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}

	wrong := startOrders(t, &ordersAPI{}, "oracle: {url: /orders, pointer: /data/length}\n")
	rep = runSelected(t, wrong, ietf(t), "replay/single-execution")
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "nothing at /data/length (/data is an array of") {
		t.Errorf("a pointer past the array: notes %q; want one saying /data is an array", rep.Notes)
	}
}

// TestListOracleMarker: with a downstream double configured, idemcheck
// writes a token of each key at the operation's marker (/reference); a list
// whose where names that member counts the key's orders by their token, for
// an API that does not list the idempotency key.
func TestListOracleMarker(t *testing.T) {
	a := &ordersAPI{records: map[string]orderRecord{}}
	srv := httptest.NewServer(a)
	defer srv.Close()
	tg, _, err := apispec.ParseConfig([]byte(`base_url: ` + srv.URL + `
key_syntax: sf-string
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
downstream:
  listen: 127.0.0.1:0
  routes: [{name: payments, method: POST, path: /v1/payments, response: {status: 200}}]
oracle: {url: /orders, count: {array: /data, where: /reference}}
operations:
  - name: orders
    method: POST
    path: /orders
    body: {sku: abc, quantity: 1, amount: 1000, reference: ""}
    marker: /reference
    id_pointer: /order_id
    mutations: [{name: changed-amount, patch: {amount: 1001}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	rep := runSelected(t, tg, ietf(t), "replay/single-execution", "mismatch/original-survives")
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass || !strings.Contains(r.Observed, "(oracle)") {
			t.Errorf("%s: %s %q %s; want a pass on the list's count by token", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
	if len(rep.Notes) > 0 {
		t.Errorf("notes %q", rep.Notes)
	}
}

// TestLaggingOracle: a list refreshed every 300 ms (a read replica, an
// asynchronous index) answers 0 for a key just after its 201. The count is
// re-read until it catches up with what the answers prove, so the correct
// API gets no MUST failure, per key or global; a list that lags past the
// bound (2.5 s) makes the cases inconclusive, never failed.
func TestLaggingOracle(t *testing.T) {
	const globalList = "oracle: {url: /orders, pointer: /data}\n"
	for _, row := range []struct {
		name   string
		lag    time.Duration
		oracle string
		settle bool // the count catches up within the bound
	}{
		{"refreshed every 300ms", 300 * time.Millisecond, listOracle, true},
		{"refreshed every 2.5s", 2500 * time.Millisecond, listOracle, false},
		// A global count credits a late rise to whichever key is being
		// sent: the previous key's count settles before the next key goes.
		{"global, refreshed every 300ms", 300 * time.Millisecond, globalList, true},
	} {
		t.Run(row.name, func(t *testing.T) {
			tg := startOrders(t, &ordersAPI{lag: row.lag}, row.oracle)
			rep := runSelected(t, tg, ietf(t), "replay/**", "mismatch/**")
			if f := mustFails(rep); len(f) > 0 {
				t.Errorf("a lagging oracle failed the correct API: %q", f)
			}
			counts := rep.Counts()
			// A stall on a loaded machine may outlast the re-reading: an
			// inconclusive is honest, a fail or a warn is not.
			if row.settle && (counts[scenarios.Fail] > 0 || counts[scenarios.Warn] > 0 || counts[scenarios.Pass] <= counts[scenarios.Inconclusive]) {
				t.Errorf("a count that catches up within 2s: %v; want passes (no fail, no warn)", counts)
				for _, r := range rep.Results {
					t.Logf("%s %s %s %s", r.Name(), r.Status, r.Observed, r.Reason)
				}
				t.Logf("notes %q", rep.Notes)
			}
			if !row.settle && (counts[scenarios.Fail] > 0 || counts[scenarios.Inconclusive] == 0) {
				t.Errorf("a count that never catches up: %v; want inconclusive, no fail", counts)
			}
		})
	}
}

// TestIDPointerChecked: an id_pointer that names nothing in the 201 (a
// typo: /id for /order_id), or the same value for two keys, stops the run
// before any verdict with one line naming the pointer and the members.
func TestIDPointerChecked(t *testing.T) {
	api := startOrders(t, &ordersAPI{}, "")
	for _, c := range []struct{ pointer, want string }{
		{"/id", "operations[0].id_pointer /id: nothing there in the 201 body (members: amount, order_id, status)"},
		{"/status", `operations[0].id_pointer /status: the same value "created" for two keys: not the created resource's id (members: amount, order_id, status); if orders changes one existing resource, say kind: update (with a version_pointer or an oracle to count its executions), or give it a setup: that makes a fresh resource per key`},
	} {
		tg := ordersTarget(t, api.BaseURL, c.pointer, "")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := scenarios.Run(ctx, tg, ietf(t), scenarios.RunOptions{Run: []string{"replay/**"}})
		cancel()
		if err == nil || err.Error() != c.want || errors.Is(err, apispec.ErrUnreachable) {
			t.Errorf("id_pointer %s: %v; want %q", c.pointer, err, c.want)
		}
	}
}

// TestIDsCannotSeeErrorAnswers: an orders API that executes a changed body
// and then answers 422 looks correct to created ids (the 422 carries no
// id). With ids alone the mismatch cases say unverifiable, never pass; with
// the list oracle the execution is counted and the MUST fails.
func TestIDsCannotSeeErrorAnswers(t *testing.T) {
	globs := []string{"mismatch/original-survives", "mismatch/changed-body", "missing/rejected"}
	ids := runSelected(t, startOrders(t, &ordersAPI{executeOnMismatch: true}, ""), ietf(t), globs...)
	if len(ids.Results) != len(globs) {
		t.Fatalf("%d results, want %d", len(ids.Results), len(globs))
	}
	for _, r := range ids.Results {
		if r.Status != scenarios.Unverifiable {
			t.Errorf("ids only: %s: %s %q %s; want unverifiable", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
	if j := ids.Judge(); j.Outcome.ExitCode() != 5 {
		t.Errorf("ids only: outcome %s; want exit 5 (not enough evidence)", j.Outcome)
	}
	counted := runSelected(t, startOrders(t, &ordersAPI{executeOnMismatch: true}, listOracle), ietf(t), "mismatch/original-survives")
	if r := counted.Results[0]; r.Status != scenarios.Fail || !strings.Contains(r.Observed, "2 executions (oracle)") {
		t.Errorf("list oracle: %s %q; want fail on 2 executions (oracle)", r.Status, r.Observed)
	}
}

// TestLaggingCounterReference: the reference app (a correct server) behind
// an effects counter that shows each execution 300 ms late, as an
// asynchronous counter or a read replica does: every effect-counting
// family runs and no case fails (a stall may leave one inconclusive, never
// a wrong verdict). Before counts were re-read, MUSTs failed on "0
// executions (oracle)".
func TestLaggingCounterReference(t *testing.T) {
	const lag = 300 * time.Millisecond
	app, err := demo.New(demo.Options{TTL: demoTTL, Lease: demoLease})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	// history: each key's true count, read after each of its requests;
	// the counter answers the last value at least lag old.
	type reading struct {
		n  int
		at time.Time
	}
	var mu sync.Mutex
	history := map[string][]reading{}
	count := func(key string) int {
		rec := httptest.NewRecorder()
		app.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/effects?key="+url.QueryEscape(key), nil))
		var body struct{ Executions int }
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return body.Executions
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		app.ServeHTTP(w, r)
		if key := strings.Trim(r.Header.Get("Idempotency-Key"), `"`); r.Method == http.MethodPost && key != "" {
			n := count(key)
			mu.Lock()
			history[key] = append(history[key], reading{n, time.Now()})
			mu.Unlock()
		}
	})
	mux.HandleFunc("GET /v1/effects", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := 0
		for _, h := range history[r.URL.Query().Get("key")] {
			if time.Since(h.at) >= lag {
				n = h.n
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"executions": n})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	rep := runSelected(t, tg, referenceProfile(t), countingFamilies...)
	counts := rep.Counts()
	for _, r := range rep.Results {
		if r.Status == scenarios.Fail || r.Status == scenarios.Warn {
			t.Errorf("%s: %s: expected %q, observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		}
	}
	if counts[scenarios.Pass] < len(rep.Results)/2 {
		t.Errorf("%v, notes %q: want most cases to pass on the lagging counter", counts, rep.Notes)
	}
	t.Logf("%d results: %v in %s", len(rep.Results), counts, rep.Duration.Round(time.Millisecond))
}

// passesOnOracle runs the replay and mismatch families against a correct
// orders API: every instance passes or skips, some verdict rests on the
// oracle's count, and the run needed no note about its evidence.
func passesOnOracle(t *testing.T, tg *apispec.Target) {
	t.Helper()
	rep := runSelected(t, tg, ietf(t), "replay/**", "mismatch/**")
	oracleSeen := false
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass && r.Status != scenarios.Skip {
			t.Errorf("%s: %s: expected %q, observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
		}
		oracleSeen = oracleSeen || strings.Contains(r.Observed, "(oracle)")
	}
	if !oracleSeen || len(rep.Notes) > 0 {
		t.Errorf("want verdicts on the oracle's count and no note; notes %q", rep.Notes)
	}
}

// TestOraclePerPrincipal: a list that shows each tenant only its own
// orders. Read with one principal's credentials, the second principal's
// executions are invisible: the count is inconclusive and says whose it
// could not see (not replica lag). With per_principal the list is read
// with each principal's own credentials, the counts summed, and the scope
// case passes on the oracle.
func TestOraclePerPrincipal(t *testing.T) {
	const perKey = "{url: /orders, count: {array: /data, where: /idempotency_key}"
	one := startOrders(t, &ordersAPI{tenants: true}, "oracle: "+perKey+"}\n")
	rep := runSelected(t, one, ietf(t), "scope/other-user-isolated")
	r := rep.Results[0]
	if r.Status != scenarios.Inconclusive || !strings.Contains(r.Reason+r.Observed, "principal 1 (bob)") || !strings.Contains(r.Reason+r.Observed, "per_principal: true") || strings.Contains(r.Reason+r.Observed, "read replica") {
		t.Errorf("one principal's view: %s: %s %s; want inconclusive naming bob's unseen executions and per_principal", r.Status, r.Reason, r.Observed)
	}
	each := startOrders(t, &ordersAPI{tenants: true}, "oracle: "+perKey+", per_principal: true}\n")
	rep = runSelected(t, each, ietf(t), "scope/other-user-isolated", "replay/single-execution")
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass || !strings.Contains(r.Observed, "oracle") {
			t.Errorf("per_principal: %s: %s: %s %s", r.Name(), r.Status, r.Reason, r.Observed)
		}
	}
}
