package scenarios_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/scenarios"
)

// TestRunInterrupted: cancelling the run's context mid-run (what SIGINT
// does) judges nothing cut short: the instances in flight and those not
// started are interrupted, none fails against a correct server, and the
// report says interrupted (exit 130). Before, the cut requests showed as
// MUST failures ("after 3 retries: 409") or "context canceled"
// inconclusives.
func TestRunInterrupted(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second)
	p, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(700*time.Millisecond, cancel)
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Parallel: 8})
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, r := range rep.Results {
		switch r.Status {
		case scenarios.Fail, scenarios.Warn, scenarios.Inconclusive:
			t.Errorf("%s: %s (%s): a cut-short case was judged", r.Name(), r.Status, r.Reason)
		case scenarios.Interrupted:
			cut++
		}
	}
	if j := rep.Judge(); !rep.Interrupted || cut == 0 || j.Outcome != scenarios.OutcomeInterrupted || j.Outcome.ExitCode() != 130 {
		t.Errorf("interrupted %t, %d instances interrupted, outcome %s: want interrupted, some, exit 130", rep.Interrupted, cut, j.Outcome)
	}
}

// TestRunCancelledAfterLastVerdict: a context that ends once every
// instance has its verdict (go test's, when the last subtest of
// idemchecktest.Handler finishes) interrupted nothing, so the run is not
// reported interrupted. Before, Run read ctx.Err() at the very end and
// turned a finished passing run into exit 130.
func TestRunCancelledAfterLastVerdict(t *testing.T) {
	tg := startDemoTTL(t, 2*time.Second)
	p, err := apispec.ProfileByName("ietf")
	if err != nil {
		t.Fatal(err)
	}
	planned, err := scenarios.Plan(tg, p, scenarios.RunOptions{Run: []string{"replay/same-status"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	seen := 0
	rep, err := scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/same-status"}, OnResult: func(scenarios.Result) {
		if seen++; seen == len(planned) {
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if j := rep.Judge(); rep.Interrupted || j.Outcome != scenarios.OutcomePass {
		t.Errorf("interrupted %t, outcome %s (%v): want a pass, nothing was cut short", rep.Interrupted, j.Outcome, j.Problems)
	}
}

// TestInterruptDuringKeyFetch: a server-issued key that never comes does
// not hold an interrupted run for the client's timeout (30 s here): the
// case's context bounds the fetch. Before, Env.NewKey fetched with
// context.Background() and the run ended only when the request timed out.
func TestInterruptDuringKeyFetch(t *testing.T) {
	issuer := demotest.NewKeyIssuer(demotest.App(t, demo.Options{TTL: demoTTL, Lease: demoLease}))
	var fetches atomic.Int32
	hung := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The preflight's key comes; later ones hang.
		if r.URL.Path == "/keys" && fetches.Add(1) > 1 {
			select {
			case hung <- struct{}{}:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return
		}
		issuer.ServeHTTP(w, r)
	})
	base := demotest.ServeOn(t, h, "127.0.0.1:0")
	tg, p, err := apispec.ParseConfig([]byte(fmt.Sprintf(`
base_url: %s
timeout: 30s
principals: [{name: alice, headers: {Authorization: Bearer alice}}]
key_source: {method: POST, path: /keys, pointer: /data/key}
operations:
  - {name: charges, method: POST, path: /v1/charges, body: {amount: 1000, currency: usd}, id_pointer: /id}
`, base)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-hung:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	_, _ = scenarios.Run(ctx, tg, p, scenarios.RunOptions{Run: []string{"replay/same-body"}})
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the run ended %s after start: a hanging key fetch held the interrupted run", el.Round(time.Second))
	}
	if fetches.Load() <= 1 {
		t.Fatalf("%d key fetches: the test never reached a hanging one", fetches.Load())
	}
}
