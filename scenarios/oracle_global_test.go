package scenarios_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// globalEffects serves the reference app with its per-key oracle hidden and
// a global counter instead, the way many APIs expose one:
// GET /_effects -> {"charges": N, "refunds": M, "total": N+M}. broken
// freezes the counter at 0 (a misconfigured oracle); double reports every
// execution twice (overlapping oracles).
func globalEffects(t testing.TB, o demo.Options, broken, double bool) *apispec.Target {
	t.Helper()
	o.TTL, o.Lease = demoTTL, demoLease
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", app)
	mux.HandleFunc("GET /v1/effects", http.NotFound) // only the global counter
	mux.HandleFunc("GET /_effects", func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		app.ServeHTTP(rec, httptest.NewRequestWithContext(r.Context(), http.MethodGet, "/v1/effects", nil))
		var totals struct {
			ByOperation struct{ Charges, Refunds int } `json:"by_operation"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &totals); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		c, f := totals.ByOperation.Charges, totals.ByOperation.Refunds
		switch {
		case broken:
			c, f = 0, 0
		case double:
			c, f = 2*c, 2*f
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"charges": c, "refunds": f, "total": c + f})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); app.Close() })
	tg, err := apispec.FromURL(srv.URL, demoTTL, demoLease)
	if err != nil {
		t.Fatal(err)
	}
	tg.Oracle = &apispec.Oracle{URL: "/_effects", Pointer: "/total"}
	return tg
}

// perOperation replaces the target's global oracle by one per operation:
// the same GET /_effects, each operation's own member.
func perOperation(tg *apispec.Target) {
	tg.Oracle = nil
	for i := range tg.Operations {
		op := &tg.Operations[i]
		op.Oracle = &apispec.Oracle{URL: "/_effects", Pointer: "/" + op.Name}
	}
}

// runSelected runs the cases matching globs.
func runSelected(t testing.TB, tg *apispec.Target, p *apispec.Profile, globs ...string) *scenarios.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: globs, Strict: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// countingFamilies are the families whose cases count executions.
var countingFamilies = []string{"concurrent/**", "errors/**", "lost/**", "mismatch/**", "replay/**", "scope/**", "security/**", "syntax/**"}

// TestGlobalCounterOracle: a correct server whose only oracle is one
// counter for the whole API passes every effect-counting case. Before the
// counter was read around each key, a case's second key (mutation probes,
// duringSlow's fresh-key re-attempts) counted as a second execution.
func TestGlobalCounterOracle(t *testing.T) {
	t.Parallel() // waits on slow variants, TTLs or a broker: overlaps the rest
	rows := []struct {
		name   string
		opts   demo.Options
		perOp  bool
		globs  []string
		repeat int
	}{
		// The target's oracle: GET /_effects, pointer /total.
		{name: "target oracle", globs: countingFamilies, repeat: 1},
		// operations[].oracle: /charges for charges, /refunds for refunds,
		// and no id_pointer, so the oracle is the only evidence.
		{name: "per-operation oracle", perOp: true, globs: []string{"mismatch/**", "concurrent/**", "scope/**", "replay/single-execution"}, repeat: 1},
		// Block-then-replay: every duplicate waits for the original, so
		// duringSlow tries three fresh keys; it failed ~40% of runs.
		{name: "blocking server", opts: demo.Options{Defects: []string{"block-inflight"}}, globs: []string{"concurrent/in-flight-conflict@charges"}, repeat: 5},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			tg := globalEffects(t, row.opts, false, false)
			if row.perOp {
				perOperation(tg)
				for i := range tg.Operations {
					tg.Operations[i].IDPointer = ""
				}
			}
			for range row.repeat {
				rep := runSelected(t, tg, referenceProfile(t), row.globs...)
				if len(rep.Results) == 0 {
					t.Fatal("no case selected")
				}
				for _, r := range rep.Results {
					if r.Status == scenarios.Fail || r.Status == scenarios.Warn || r.Status == scenarios.Inconclusive || r.Status == scenarios.Unverifiable {
						t.Errorf("%s: %s: expected %q, observed %q %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
					}
				}
				if len(rep.Notes) > 0 {
					t.Errorf("notes %q on a correct oracle", rep.Notes)
				}
			}
		})
	}
}

// TestMisconfiguredOracle: an oracle whose count does not rise by exactly
// one for one 2xx request under a fresh key is reported in one note, and
// the cases that count effects are inconclusive instead of judged.
func TestMisconfiguredOracle(t *testing.T) {
	rows := []struct {
		name, note string
		broken     bool
	}{
		// A pointer at a member that never moves: every count is 0.
		{"count never moves", "oracle misconfigured", true},
		// Two oracles counting the same execution: a rise of 2.
		{"count rises by 2", "counted 2 executions", false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			tg := globalEffects(t, demo.Options{}, row.broken, !row.broken)
			tg.Operations[0].IDPointer = "" // the oracle is the only evidence
			rep := runSelected(t, tg, referenceProfile(t), "replay/single-execution@charges", "mismatch/changed-body@charges", "syntax/key-accepted@charges", "replay/same-status@charges")
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], row.note) || strings.Contains(rep.Notes[0], "\n") {
				t.Fatalf("notes %q, want one line containing %q", rep.Notes, row.note)
			}
			for _, r := range rep.Results {
				want := scenarios.Inconclusive
				if r.ID == "replay/same-status" {
					want = scenarios.Pass // counts nothing: judged as usual
				}
				if r.Status != want || (want == scenarios.Inconclusive && r.Reason != rep.Notes[0]) {
					t.Errorf("%s: %s (%s), want %s with the note", r.Name(), r.Status, r.Reason, want)
				}
			}
		})
	}
}

// TestPerOperationOracleConfig: operations[].oracle parses, overrides the
// target's, and a mix of per-key and global counters is refused.
func TestPerOperationOracleConfig(t *testing.T) {
	const base = `
base_url: http://127.0.0.1:1
principals: [{name: a}]
oracle: {url: /_effects, pointer: /total}
operations:
  - name: charges
    method: POST
    path: /charges
    oracle: {url: /_effects, pointer: /charges}
  - name: refunds
    method: POST
    path: /refunds
`
	tg, _, err := apispec.ParseConfig([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.OracleOf(&tg.Operations[0]).Pointer; got != "/charges" {
		t.Errorf("charges oracle pointer %q, want /charges", got)
	}
	if got := tg.OracleOf(&tg.Operations[1]).Pointer; got != "/total" {
		t.Errorf("refunds oracle pointer %q, want the target's /total", got)
	}
	if !tg.GlobalOracle() || len(tg.Oracles()) != 2 {
		t.Errorf("GlobalOracle %v, Oracles %d; want true, 2", tg.GlobalOracle(), len(tg.Oracles()))
	}
	bad := []struct{ yaml, want string }{
		{strings.Replace(base, "pointer: /charges", "pointer: charges", 1), "operations[0].oracle.pointer"},
		{strings.Replace(base, "url: /_effects, pointer: /charges", `url: "/e?key={key}", pointer: /n`, 1), "one counts per key"},
	}
	for _, b := range bad {
		if _, _, err := apispec.ParseConfig([]byte(b.yaml)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParseConfig: %v, want an error naming %q", err, b.want)
		}
	}
}

// TestOracleUseDeclared: a case that asks the oracle declares it
// (NeedOracle, NeedEffects or Case.UsesOracle), so that idemcheck list
// shows its real oracle mode and a broken oracle makes it inconclusive.
func TestOracleUseDeclared(t *testing.T) {
	tg := startDemo(t)
	p := referenceProfile(t)
	planned, err := scenarios.Plan(tg, p, scenarios.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mode := map[string]string{}
	for _, pl := range planned {
		mode[pl.Name()] = pl.OracleMode
	}
	rep, err := runCatalog(tg, p, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if scenarios.OracleAsked(r) && mode[r.Name()] == scenarios.OracleNone {
			t.Errorf("%s asked the oracle but declares no oracle use (add UsesOracle: true)", r.Name())
		}
	}
}
