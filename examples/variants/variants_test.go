package variants

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// variant is one server and the YAML config that describes it.
type variant struct {
	name string
	// why: the one choice this server makes differently from the core,
	// and why the verdict expected of it is right.
	why     string
	config  string // file in testdata/
	choices Choices
	null    bool          // serve Null() instead of New(choices)
	idle    time.Duration // http.Server IdleTimeout (0: net/http's default)
	only    []string      // RunOptions.Run globs (empty: the whole catalog)
	// catches: for a broken server, the case IDs of which at least one
	// instance must fail; empty for a legal server, which must get no fail
	// and no warn.
	catches []string
}

var variants = []variant{
	// Legal: each must pass the whole catalog under its config's profile.
	{name: "core", config: "core.yaml",
		why: "the correct core (sf-string key required, 409 in flight, 422 on a changed body, TTL from the first request), per-key oracle"},
	{name: "core-global-counter", config: "core-global.yaml",
		why: "the core described with one global counter GET /_effects -> {\"charges\":N,\"refunds\":M}, one pointer per operation"},
	{name: "int-ids", config: "core.yaml", choices: Choices{IntIDs: true},
		why: "ids 1, 2, 3 per table: a charge and a refund may share an id, which says nothing about execution across endpoints"},
	{name: "int-ids-fresh-scope", config: "core.yaml", choices: Choices{IntIDs: true}, only: []string{"scope/other-endpoint@charges"},
		why: "integer ids on a fresh server, only scope/other-endpoint@charges run (as `--run` selects it): the charge and the refund under one key both get id 1"},
	{name: "locked-423", config: "locked-423.yaml", choices: Choices{InFlight: Locked423},
		why: "423 Locked + Retry-After in flight (issue #42's proposal), declared in_flight_status [423]; global counter"},
	{name: "blocking", config: "core.yaml", choices: Choices{InFlight: Block},
		why: "a duplicate in flight waits for the original, then gets its replay (block_ok); per-key oracle"},
	{name: "blocking-global-counter", config: "core-global.yaml", choices: Choices{InFlight: Block},
		why: "the blocking server described with the global counter: the case issue 9 saw fail in 40% of runs"},
	{name: "mismatch-409", config: "mismatch-409.yaml", choices: Choices{MismatchStatus: http.StatusConflict},
		why: "409 for a changed body (seeds, rocket-rides), declared mismatch_status [409]; global counter"},
	{name: "stripe-errors", config: "core.yaml", choices: Choices{StripeErrors: true},
		why: "errors as plain application/json {\"error\":{\"type\",\"message\",\"doc_url\"}}: doc_url is the draft's link to documentation; per-key oracle"},
	{name: "optional-key", config: "optional-key.yaml", choices: Choices{OptionalKey: true},
		why: "no key: the request just executes (Stripe), declared key_required false; global counter"},
	{name: "ttl-from-completion", config: "core.yaml", choices: Choices{TTLFromCompletion: true},
		why: "retention counted from the stored response, not the first request (no source defines it); per-key oracle"},
	{name: "expired-409", config: "expired-409.yaml", choices: Choices{ExpiredConflict: true},
		why: "after retention the key answers 409 \"expired\" (Echo, IK-EXPIRY-3), declared expiry expired-409; per-key oracle"},
	{name: "uuid-keys", config: "uuid-keys.yaml", choices: Choices{UUIDKeys: true},
		why: "keys must be bare 36-character UUIDs, declared as profile key_format: uuid, which the generator obeys; per-key oracle"},
	{name: "idle-5s", config: "idle-5s.yaml", idle: 5 * time.Second,
		why: "the server closes idle keep-alive connections after 5 s (Node's default) and keys live 4 s: the expiry retries, at TTL + grace = 5 s, meet connections the server closes; per-key oracle"},

	// Broken: each must fail the run, on the named cases.
	{name: "null-no-oracle", config: "null.yaml", null: true,
		why: "ignores the key, always 201 {\"status\":\"accepted\"}; the config names no oracle and no id: nothing proves a replay, so the run must not pass"},
	{name: "null-key-oracle", config: "core.yaml", null: true,
		why:     "ignores the key; a per-key oracle sees every retry execute",
		catches: []string{"concurrent/same-key-burst", "lost/dropped-response-retry", "mismatch/original-survives", "replay/single-execution"}},
	{name: "null-global-counter", config: "core-global.yaml", null: true,
		why:     "ignores the key; the global counter sees every retry execute",
		catches: []string{"concurrent/same-key-burst", "lost/dropped-response-retry", "mismatch/original-survives", "replay/single-execution"}},
	{name: "mismatch-executes", config: "core.yaml", choices: Choices{ExecuteOnMismatch: true},
		why:     "a changed body runs the handler, then gets 422: the answer is right, the side effect is not",
		catches: []string{"mismatch/original-survives", "mismatch/changed-body"}},
	{name: "lock-lapses", config: "core.yaml", choices: Choices{LockLapse: time.Second},
		why:     "the in-flight lock lapses after 1 s while the slow request takes 1.5 s: only a duplicate sent late in the original's run executes again",
		catches: []string{"concurrent/in-flight-offsets"}},
	{name: "missing-executes", config: "global-charges.yaml", choices: Choices{ExecuteMissing: true},
		why:     "a request without a key is executed, then answered 400: the status is right, the execution is not (a per-key oracle cannot count a keyless run: a global counter)",
		catches: []string{"missing/rejected"}},
	{name: "racy-expiry", config: "core.yaml", choices: Choices{RacyExpiry: true},
		why:     "expiry cleanup deletes by key outside the claim: a concurrent burst right after expiry executes more than once",
		catches: []string{"expiry/expired-key-burst"}},
}

// Bounds on the catalog runs in flight. A run with a per-key oracle (or
// none) starts every case at once, a burst of requests that two cores can
// carry twice over without stalling the cases' timing; a run with a global
// counter judges its counting cases one at a time and mostly waits, so a
// few more fit beside them. go test's -parallel (GOMAXPROCS) would allow
// two runs in all.
const (
	concurrentRuns      = 6
	concurrentHeavyRuns = 2
)

// TestVariants runs the whole catalog against every variant through its
// YAML config, as `idemcheck run --config` would. A run takes about TTL +
// grace with a per-key oracle (6 s), 50-80 s with a global counter.
func TestVariants(t *testing.T) {
	all, heavy := make(chan struct{}, concurrentRuns), make(chan struct{}, concurrentHeavyRuns)
	var wg sync.WaitGroup
	for _, v := range variants {
		wg.Go(func() {
			t.Run(v.name, func(t *testing.T) {
				tg, profile, err := apispec.LoadConfig(filepath.Join("testdata", v.config))
				if err != nil {
					t.Fatal(err)
				}
				if tg.Oracle == nil || strings.Contains(tg.Oracle.URL, "{key}") {
					heavy <- struct{}{}
					defer func() { <-heavy }()
				}
				all <- struct{}{}
				defer func() { <-all }()
				v.check(t, tg, profile)
			})
		})
	}
	wg.Wait()
	goleak.VerifyNone(t)
}

func (v variant) check(t *testing.T, tg *apispec.Target, profile *apispec.Profile) {
	rep := v.run(t, tg, profile)
	counts := rep.Counts()
	ok, problems := rep.Outcome()
	t.Logf("%s: %d results %v in %s", v.why, len(rep.Results), counts, rep.Duration.Round(time.Millisecond))

	if len(v.catches) == 0 && !v.null {
		for _, r := range rep.Results {
			switch r.Status {
			case scenarios.Fail, scenarios.Warn:
				t.Errorf("%s: %s: expected %s; observed %s %s", r.Name(), r.Status, r.Expected, r.Observed, r.Reason)
			case scenarios.Unverifiable, scenarios.Inconclusive:
				t.Logf("%s: %s: %s", r.Name(), r.Status, r.Reason)
			}
		}
		if !ok {
			// An inconclusive case (an overlap or a replay window a loaded
			// machine could not create) is missing evidence, not a verdict
			// on the server: only another problem fails the test.
			var real []string
			for _, p := range problems {
				if !slices.ContainsFunc(rep.Results, func(r scenarios.Result) bool {
					return r.Status == scenarios.Inconclusive && strings.HasPrefix(p, r.Name()+":")
				}) {
					real = append(real, p)
				}
			}
			if len(real) > 0 {
				t.Errorf("a legal server's run does not pass: %s", strings.Join(real, "; "))
			} else {
				t.Logf("the run is incomplete on this machine, only through inconclusive cases: %s", strings.Join(problems, "; "))
			}
		}
		return
	}
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass && r.Status != scenarios.Skip {
			t.Logf("%s: %s: %s %s", r.Name(), r.Status, r.Observed, r.Reason)
		}
	}
	if ok {
		t.Errorf("a broken server's run passed: %v", counts)
	}
	for _, id := range v.catches {
		var seen []string
		for _, r := range rep.Results {
			if r.ID == id {
				seen = append(seen, r.Name()+" "+string(r.Status))
			}
		}
		caught := slices.ContainsFunc(rep.Results, func(r scenarios.Result) bool { return r.ID == id && r.Status == scenarios.Fail })
		if !caught {
			t.Errorf("%s must fail on the defect; got %v", id, seen)
		}
	}
}

// run serves the variant on 127.0.0.1:0, points the config at it and runs
// the whole catalog.
func (v variant) run(t *testing.T, tg *apispec.Target, profile *apispec.Profile) *scenarios.Report {
	var h http.Handler
	if v.null {
		h = Null()
	} else {
		c := v.choices
		c.TTL = tg.TTL // the server keeps keys as long as its config declares
		h = New(c)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.IdleTimeout = v.idle
	srv.Start()
	defer srv.Close()
	defer srv.CloseClientConnections()
	tg.BaseURL = srv.URL

	// A global counter runs the catalog serially: a few minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := scenarios.Run(ctx, tg, profile, scenarios.RunOptions{Run: v.only})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) == 0 {
		t.Fatal("the catalog ran no case")
	}
	return rep
}
