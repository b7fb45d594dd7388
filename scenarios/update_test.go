package scenarios_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// updateConfig is the reference's operations on an existing charge: a
// PATCH and a cancel, each on a fresh charge per key (setup:), judged as
// updates (every answer names the same charge) by their own oracle.
const updateConfig = `base_url: %s
key_syntax: sf-string
principals:
  - {name: alice, headers: {Authorization: Bearer alice}}
  - {name: bob, headers: {Authorization: Bearer bob}}
operations:
  - name: update-charge
    method: PATCH
    path: /v1/charges/{setup.id}
    kind: update
    id_pointer: /id
    version_pointer: /version
    headers: {Content-Type: application/json}
    body: {description: first}
    mutations:
      - {name: changed-description, patch: {description: changed}}
    setup: {method: POST, path: /v1/charges, body: {amount: 1000, currency: usd}}
    oracle: {url: "/v1/effects?key={key}", pointer: /by_operation/updates}
%s    oracle: {url: "/v1/effects?key={key}", pointer: /by_operation/cancels}
`

var updateGlobs = []string{"update/**", "replay/**", "mismatch/**", "scope/**"}

func updateTarget(t *testing.T, defects ...string) *apispec.Target {
	t.Helper()
	app, err := demo.New(demo.Options{Defects: defects})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		app.Close()
	})
	path := t.TempDir() + "/idemcheck.yaml"
	if err := os.WriteFile(path, fmt.Appendf(nil, updateConfig, srv.URL, demotest.CancelOperation), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, _, err := apispec.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestUpdateSetupReference: the reference's PATCH and cancel, each on a
// fresh charge made by its setup: for every key, pass every update,
// replay, mismatch and scope case they run (no fail, no warn): equal ids
// are never read as a replay or a leak.
func TestUpdateSetupReference(t *testing.T) {
	rep := runSelected(t, updateTarget(t), referenceProfile(t), updateGlobs...)
	ran := map[string]bool{}
	for _, r := range rep.Results {
		if r.Status == scenarios.Fail || r.Status == scenarios.Warn {
			t.Errorf("%s: %s: %s (expected %s)", r.Name(), r.Status, r.Observed, r.Expected)
		}
		if r.Status == scenarios.Pass {
			ran[r.ID] = true
		}
	}
	for _, id := range []string{"update/after-other-key", "replay/same-body", "mismatch/changed-body", "scope/other-user-isolated"} {
		if !ran[id] {
			t.Errorf("%s never passed on the correct build", id)
		}
	}
	for _, x := range rep.Results[0].Exchanges {
		if x.Label != "" && x.Label[:5] == "setup" {
			return // journalled
		}
	}
	t.Log("the first result shows no setup exchange")
}

// TestUpdateDefects: each defect of the reference's operations on an
// existing charge fails the case that names it.
func TestUpdateDefects(t *testing.T) {
	for _, row := range []struct{ defect, op, id string }{
		{"update-replays-current-state", "update-charge", "update/after-other-key"},
		{"update-ignores-fingerprint", "update-charge", "mismatch/changed-body"},
		{"action-reexecutes", "cancel-charge", "replay/single-execution"},
	} {
		t.Run(row.defect, func(t *testing.T) {
			t.Parallel()
			rep := runSelected(t, updateTarget(t, row.defect), referenceProfile(t), updateGlobs...)
			i := slices.IndexFunc(rep.Results, func(r scenarios.Result) bool { return r.ID == row.id && r.Operation == row.op })
			if i < 0 || rep.Results[i].Status != scenarios.Fail {
				for _, r := range rep.Results {
					t.Logf("%s: %s %s", r.Name(), r.Status, r.Observed)
				}
				t.Fatalf("%s on %s not failed by %s", row.defect, row.op, row.id)
			}
		})
	}
}

// TestUpdateReplayCurrentStateDocumented: an API that documents replaying
// the resource's current state (profile replay: current-state) passes
// update/after-other-key with exactly that answer — a legal choice, never a
// failure — and a profile value outside the two is refused by name.
func TestUpdateReplayCurrentStateDocumented(t *testing.T) {
	p := referenceProfile(t)
	p.Replay = apispec.ReplayCurrentState
	rep := runSelected(t, updateTarget(t, "update-replays-current-state"), p, "update/after-other-key")
	i := slices.IndexFunc(rep.Results, func(r scenarios.Result) bool { return r.Operation == "update-charge" })
	if i < 0 || rep.Results[i].Status != scenarios.Pass || !strings.Contains(rep.Results[i].Observed, "replay: current-state") {
		t.Fatalf("update/after-other-key on a documented current-state replay: %+v", rep.Results)
	}
	p.Replay = "latest"
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "profile replay \"latest\"") {
		t.Errorf("profile replay latest: %v, want it refused by name", err)
	}
}

// ledgerAPI is one account that every principal may deposit to with a
// PATCH (a correct per-principal idempotency layer): every answer is
// {"id":"acc_5", ...}, and /effects?key= counts each key's executions.
type ledgerAPI struct {
	mu      sync.Mutex
	balance int
	stored  map[string][]byte // principal + key → stored answer
	runs    map[string]int    // key → executions
}

func (l *ledgerAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.URL.Path == "/effects" {
		fmt.Fprintf(w, `{"executions":%d}`, l.runs[r.URL.Query().Get("key")])
		return
	}
	key := strings.Trim(r.Header.Get("Idempotency-Key"), `"`)
	if key == "" {
		http.Error(w, `{"error":"key required"}`, http.StatusBadRequest)
		return
	}
	scope := r.Header.Get("Authorization") + "\x00" + key
	body, _ := io.ReadAll(r.Body)
	if b, ok := l.stored[scope]; ok {
		if !bytes.Equal(b[:bytes.IndexByte(b, '\n')], body) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b[bytes.IndexByte(b, '\n')+1:])
		return
	}
	l.runs[key]++
	l.balance++
	out := fmt.Appendf(nil, `{"id":"acc_5","balance":%d}`, l.balance)
	l.stored[scope] = append(append(body, '\n'), out...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// TestLearnedUpdate: a PATCH of one existing charge whose config says
// nothing of its kind, with id_pointer /id (what init guessed): every
// answer carries that id. The start check learns it is an update and says
// so; the scope and security cases then never read the shared id as a
// leak, and the replay cases count by the oracle.
func TestLearnedUpdate(t *testing.T) {
	srv := httptest.NewServer(&ledgerAPI{stored: map[string][]byte{}, runs: map[string]int{}})
	defer srv.Close()
	for _, oracle := range []string{`oracle: {url: "/effects?key={key}", pointer: /executions}`, ""} {
		tg, _, err := apispec.ParseConfig(fmt.Appendf(nil, `base_url: %s
key_syntax: sf-string
principals:
  - {name: alice, headers: {Authorization: Bearer alice}}
  - {name: bob, headers: {Authorization: Bearer bob}}
%s
operations:
  - name: deposit
    method: PATCH
    path: /accounts/acc_5
    headers: {Content-Type: application/json}
    body: {amount: 1}
    id_pointer: /id
    mutations: [{name: more, patch: {amount: 2}}]
`, srv.URL, oracle))
		if err != nil {
			t.Fatal(err)
		}
		rep := runSelected(t, tg, ietf(t), "scope/other-user-isolated", "security/cross-principal-guess", "replay/single-execution", "mismatch/changed-body")
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "judged as kind: update") }) {
			t.Errorf("no note on the learned kind: %q", rep.Notes)
		}
		for _, r := range rep.Results {
			// With the oracle every case passes; without it the ids
			// are no evidence and no case may pass or fail on them.
			if oracle != "" && r.Status != scenarios.Pass || oracle == "" && (r.Status == scenarios.Fail || r.Status == scenarios.Warn) {
				t.Errorf("oracle %q: %s: %s: %s %s", oracle, r.Name(), r.Status, r.Observed, r.Reason)
			}
		}
	}
}
