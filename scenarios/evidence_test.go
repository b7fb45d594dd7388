package scenarios_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// tinyAPI is a small plain net/http API with charges and refunds, integer
// ids numbered per table, and an execution counter at GET /_effects (a
// global {"charges":N,"refunds":M,"total":N+M}, or per key with ?key=K).
type tinyAPI struct {
	// ignoreKey: every request executes and answers a constant
	// 201 {"status":"accepted"} (a server that ignores the key).
	ignoreKey bool
	// failOracleFor: the per-key count of a key this principal used
	// answers 500.
	failOracleFor string
	// refundIDs: a refund's integer id is the last charge's (each table
	// numbers its own rows, and here they happen to meet).
	refundIDs bool

	mu     sync.Mutex
	ids    map[string]int    // last id per table
	stored map[string][]byte // (principal, path, key) -> stored answer
	execs  map[string]int    // per table
	perKey map[string]int
	users  map[string]string // key -> principals that used it
}

func (a *tinyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/_effects" {
		a.effects(w, r)
		return
	}
	if r.Method != http.MethodPost || (r.URL.Path != "/charges" && r.URL.Path != "/refunds") {
		http.NotFound(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	table := strings.TrimPrefix(r.URL.Path, "/")
	key := strings.Trim(strings.Join(r.Header.Values("Idempotency-Key"), ","), `"`)
	who := r.Header.Get("Authorization")
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[key] += who
	w.Header().Set("Content-Type", "application/json")
	if a.ignoreKey {
		a.execs[table]++
		a.perKey[key]++
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"status":"accepted"}`))
		return
	}
	slot := who + " " + r.URL.Path + " " + key
	body, ok := a.stored[slot]
	if !ok {
		a.execs[table]++
		a.perKey[key]++
		a.ids[table]++
		if a.refundIDs && table == "refunds" {
			a.ids[table] = a.ids["charges"]
		}
		body = fmt.Appendf(nil, `{"id":%d,"object":%q}`, a.ids[table], table)
		a.stored[slot] = body
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

func (a *tinyAPI) effects(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !r.URL.Query().Has("key") {
		c, f := a.execs["charges"], a.execs["refunds"]
		_ = json.NewEncoder(w).Encode(map[string]int{"charges": c, "refunds": f, "total": c + f})
		return
	}
	k := r.URL.Query().Get("key")
	if a.failOracleFor != "" && strings.Contains(a.users[k], a.failOracleFor) {
		http.Error(w, "counter unavailable", http.StatusInternalServerError)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]int{"executions": a.perKey[k]})
}

// startTiny serves a and returns a config for it: principals alice and
// bob, no oracle, no id pointer.
func startTiny(t testing.TB, a *tinyAPI) *apispec.Target {
	t.Helper()
	a.ids, a.stored, a.execs, a.perKey, a.users = map[string]int{}, map[string][]byte{}, map[string]int{}, map[string]int{}, map[string]string{}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	op := func(name string) apispec.Operation {
		return apispec.Operation{Name: name, Method: http.MethodPost, Path: "/" + name, Body: json.RawMessage(`{"amount":1}`)}
	}
	return &apispec.Target{
		BaseURL: srv.URL, KeyHeader: "Idempotency-Key", KeySyntax: apispec.SFString, Timeout: 5 * time.Second,
		Principals: []apispec.Principal{
			{Name: "alice", Headers: map[string]string{"Authorization": "alice"}},
			{Name: "bob", Headers: map[string]string{"Authorization": "bob"}},
		},
		Operations: []apispec.Operation{op("charges"), op("refunds")},
	}
}

var (
	globalCounter = &apispec.Oracle{URL: "/_effects", Pointer: "/total"}
	perKeyCounter = &apispec.Oracle{URL: "/_effects?key={key}", Pointer: "/executions"}
)

// TestEvidenceFindings: what the engine takes as evidence of a replay, a
// leak or a second execution. Each row failed before its fix.
func TestEvidenceFindings(t *testing.T) {
	rows := []struct {
		name   string
		api    *tinyAPI
		oracle *apispec.Oracle
		ids    bool // id_pointer /id
		cases  []string
		want   scenarios.Status
		reason string // in the reason or observation
	}{
		// Two equal bodies without ids or an oracle are no evidence: a
		// server ignoring the key passed key-accepted and failed
		// max-length ("truncated onto the shorter key").
		{name: "equal bodies without ids or oracle", api: &tinyAPI{ignoreKey: true},
			cases: []string{"syntax/key-accepted@charges", "syntax/max-length@charges"}, want: scenarios.Unverifiable, reason: "equal bodies do not show a replay"},
		// repeated-header asks the oracle: both forms executed every time
		// behind equal bodies, and it passed.
		{name: "repeated header counted by the oracle", api: &tinyAPI{ignoreKey: true}, oracle: globalCounter,
			cases: []string{"syntax/repeated-header@charges"}, want: scenarios.Fail, reason: "executed twice"},
		// An oracle error is inconclusive with its cause; scope counted it
		// as a leak.
		{name: "oracle error in scope", api: &tinyAPI{ignoreKey: true, failOracleFor: "bob"}, oracle: perKeyCounter,
			cases: []string{"scope/other-user-isolated@charges"}, want: scenarios.Inconclusive, reason: "500"},
		// Charge 2 and refund 2 are different resources: the oracle shows
		// the refund executed. Ids were compared first: "replayed".
		{name: "colliding integer ids, oracle", api: &tinyAPI{refundIDs: true}, oracle: globalCounter, ids: true,
			cases: []string{"scope/other-endpoint@charges"}, want: scenarios.Skip, reason: "independent"},
		// Without an oracle equal integer ids across tables are weak
		// evidence: inconclusive, saying so.
		{name: "colliding integer ids, no oracle", api: &tinyAPI{refundIDs: true}, ids: true,
			cases: []string{"scope/other-endpoint@charges"}, want: scenarios.Inconclusive, reason: "weak evidence"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			tg := startTiny(t, row.api)
			tg.Oracle = row.oracle
			for i := range tg.Operations {
				if row.ids {
					tg.Operations[i].IDPointer = "/id"
				}
			}
			rep := runSelected(t, tg, referenceProfile(t), row.cases...)
			if len(rep.Results) != len(row.cases) {
				t.Fatalf("%d results, want %d", len(rep.Results), len(row.cases))
			}
			for _, r := range rep.Results {
				if r.Status != row.want || !strings.Contains(r.Reason+" "+r.Observed, row.reason) {
					t.Errorf("%s: %s (%s; %s), want %s mentioning %q", r.Name(), r.Status, r.Reason, r.Observed, row.want, row.reason)
				}
			}
		})
	}
}
