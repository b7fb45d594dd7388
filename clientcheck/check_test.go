package clientcheck_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/clientcheck"
	"github.com/idemcheck/idemcheck/reference/client"
	"github.com/idemcheck/idemcheck/scenarios"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refDriver runs the reference client's Main in-process under the
// driving contract.
type refDriver struct {
	defects []client.Defect
	timeout time.Duration
}

func (d refDriver) Drive(ctx context.Context, env clientcheck.Env) (clientcheck.Exit, error) {
	vars := map[string]string{}
	for _, kv := range env.Vars() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var out, errs bytes.Buffer
	code := client.Main(ctx, func(k string) string { return vars[k] }, &out, &errs, client.Options{Defects: d.defects, Timeout: d.timeout})
	return clientcheck.Exit{IDs: strings.Fields(out.String()), Code: code, Stderr: errs.String(), Killed: ctx.Err() != nil}, nil
}

func check(t *testing.T, d clientcheck.Driver, run ...string) *scenarios.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := clientcheck.Check(ctx, clientcheck.Options{Driver: d, Subject: "refclient", Run: run, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The reference client passes the whole catalog under --strict: no
// fail, no warn, nothing without evidence.
func TestReferenceClientPasses(t *testing.T) {
	rep := check(t, refDriver{})
	for _, r := range rep.Results {
		t.Logf("%-24s %-12s %s%s", r.ID, r.Status, r.Observed, r.Reason)
		if r.Status != scenarios.Pass {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
		}
	}
	if j := rep.Judge(); j.Outcome != scenarios.OutcomePass {
		t.Errorf("outcome %s: %v", j.Outcome, j.Problems)
	}
	if c := rep.Conformance(); c.Level != scenarios.LevelClient {
		t.Errorf("level %q (%s), want %q", c.Level, c.Why, scenarios.LevelClient)
	}
	t.Logf("catalog wall time for the reference client: %s", rep.Duration)
}

// catalogRun narrows BenchmarkCatalog to the cases of one glob, for
// scripts/bench-faces-client.sh's smoke form.
var catalogRun = flag.String("catalog.run", "", "BenchmarkCatalog runs only the cases matching this glob")

// BenchmarkCatalog reports the client catalog's wall time for the
// reference client (in-process), dominated by the cases' back-off waits:
// go test -run '^$' -bench Catalog -benchtime 1x ./clientcheck/
// (scripts/bench-faces-client.sh sets it beside the CLI's).
func BenchmarkCatalog(b *testing.B) {
	var run []string
	if *catalogRun != "" {
		run = []string{*catalogRun}
	}
	for b.Loop() {
		rep, err := clientcheck.Check(b.Context(), clientcheck.Options{Driver: refDriver{}, Subject: "refclient", Run: run, Strict: true})
		if err != nil {
			b.Fatal(err)
		}
		if j := rep.Judge(); j.Outcome != scenarios.OutcomePass {
			b.Fatalf("outcome %s: %v", j.Outcome, j.Problems)
		}
	}
}

// Each classic defect fails the case that names it (under --strict, the
// SHOULD ones too).
func TestDefectsCaught(t *testing.T) {
	for _, tc := range []struct {
		defect client.Defect
		run    string
		fails  []string
	}{
		{client.FreshKeyPerRetry, "retry/lost-answer", []string{"retry/lost-answer"}},
		{client.FreshKeyPerRetry, "{lost/one-execution,key/one-per-call}", []string{"lost/one-execution", "key/one-per-call"}},
		{client.KeyInDefaultHeaders, "key/unique-*", []string{"key/unique-sequential", "key/unique-parallel"}},
		{client.BodyRebuiltPerAttempt, "retry/after-500", []string{"retry/after-500"}},
		{client.Retried422, "no-resend/*", []string{"no-resend/after-422"}},
		{client.IgnoredRetryAfter, "retry-after/honoured", []string{"retry-after/honoured"}},
		{client.NoKeyOnTimeoutRetry, "retry/timeout", []string{"retry/timeout", "key/present"}},
	} {
		t.Run(string(tc.defect)+"@"+tc.run, func(t *testing.T) {
			rep := check(t, refDriver{defects: []client.Defect{tc.defect}}, append([]string{tc.run}, tc.fails...)...)
			got := map[string]scenarios.Result{}
			for _, r := range rep.Results {
				got[r.ID] = r
			}
			for _, id := range tc.fails {
				r, ok := got[id]
				if !ok {
					t.Fatalf("%s did not run", id)
				}
				if e := rep.Effective(r); e.Status != scenarios.Fail {
					t.Errorf("%s: %s, want fail (%s)", id, r.Status, r.Reason)
				} else {
					t.Logf("%s: %s: %s", id, r.Status, r.Reason)
				}
			}
			if j := rep.Judge(); j.Outcome != scenarios.OutcomeFail {
				t.Errorf("outcome %s, want fail", j.Outcome)
			}
			if c := rep.Conformance(); tc.defect != client.IgnoredRetryAfter && c.Level != scenarios.LevelNotConformant {
				t.Errorf("level %q, want %q", c.Level, scenarios.LevelNotConformant)
			}
		})
	}
}

// A client whose timeout is longer than the hold never times out: the
// timeout case says inconclusive, never pass, and lost/one-execution
// judges the lost answer alone.
func TestLongTimeoutInconclusive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := clientcheck.Check(ctx, clientcheck.Options{Driver: refDriver{timeout: 3 * time.Second}, Subject: "refclient",
		Run: []string{"retry/timeout", "lost/one-execution"}, Hold: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scenarios.Status{"retry/timeout": scenarios.Inconclusive, "lost/one-execution": scenarios.Pass}
	for _, r := range rep.Results {
		if r.Status != want[r.ID] {
			t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Reason, want[r.ID])
		}
	}
	if j := rep.Judge(); j.Outcome != scenarios.OutcomeIncomplete {
		t.Errorf("outcome %s, want incomplete (exit 5)", j.Outcome)
	}
}

// A command that never calls, or calls only paths the config does not
// serve, is a setup error (exit 4), never a verdict.
func TestSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    clientcheck.Driver
		says string
	}{
		{"never-calls", clientcheck.Func(func(context.Context, string) (string, error) { return "", errors.New("offline") }), "without calling the stand-in"},
		{"wrong-path", clientcheck.Func(func(ctx context.Context, base string) (string, error) {
			resp, err := http.Post(base+"/v9/nothing", "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
			}
			return "", errors.New("404")
		}), "no operation of the stand-in's config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := clientcheck.Check(t.Context(), clientcheck.Options{Driver: tc.d, Run: []string{"key/present"}})
			var se *clientcheck.SetupError
			if !errors.As(err, &se) || se.Code != 4 || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want a setup error (4) saying %q", err, tc.says)
			}
		})
	}
}

// postCharge is a bare client attempt: one POST under key, nil error for
// any answer.
func postCharge(ctx context.Context, base, key string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/charges", strings.NewReader(`{"amount":1000,"currency":"usd"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// retry/bounded flags no back-off and a constant one, and passes a
// jittered exponential one; a client that does not retry skips it, and
// waits too few to show growth are inconclusive, never a pass.
func TestBoundedBackoff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attempts int
		wait     func(attempt int) time.Duration
		want     scenarios.Status
	}{
		{"none", 4, func(int) time.Duration { return 0 }, scenarios.Warn},
		{"constant", 4, func(int) time.Duration { return 100 * time.Millisecond }, scenarios.Warn},
		// equal jitter: half the doubling wait fixed, half random
		{"jittered", 4, func(i int) time.Duration {
			half := 40 * time.Millisecond << i
			return half + time.Duration(rand.Int64N(int64(half)))
		}, scenarios.Pass},
		{"gives-up-at-once", 1, func(int) time.Duration { return 0 }, scenarios.Skip},
		{"one-retry", 2, func(int) time.Duration { return 100 * time.Millisecond }, scenarios.Inconclusive},
		{"two-equal-waits", 3, func(int) time.Duration { return 100 * time.Millisecond }, scenarios.Inconclusive},
		{"two-growing-waits", 3, func(i int) time.Duration { return 100 * time.Millisecond << (2 * i) }, scenarios.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := func(ctx context.Context, base string) (string, error) {
				key := "bounded-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-random-part"
				for i := range tc.attempts {
					if i > 0 {
						time.Sleep(tc.wait(i - 1))
					}
					if _, err := postCharge(ctx, base, key); err != nil {
						return "", err
					}
				}
				return "", errors.New("gave up")
			}
			rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Driver: clientcheck.Func(call), Run: []string{"retry/bounded"}})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Status != tc.want {
				t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Observed, tc.want)
			}
		})
	}
}

// Over gRPC (examples/grpc.yaml: AIP-155's request_id on the reference
// PaymentService) the reference client passes every case that applies
// (Retry-After does not: a gRPC status has none), and a fresh
// request_id per retry fails the retry cases.
func TestGRPCClient(t *testing.T) {
	tgt, profile, err := apispec.LoadConfig("../examples/grpc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		defects []client.Defect
		fail    string
	}{{nil, ""}, {[]client.Defect{client.FreshKeyPerRetry}, "retry/lost-answer"}} {
		rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tgt, Profile: profile, Driver: refDriver{defects: tc.defects}, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			t.Logf("%v %-22s %-12s %s%s", tc.defects, r.ID, r.Status, r.Observed, r.Reason)
			switch {
			case tc.fail == "" && r.Status != scenarios.Pass && !scenarios.DoesNotApply(r):
				t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
			case tc.fail == r.ID && r.Status != scenarios.Fail:
				t.Errorf("%s: %s, want fail", r.ID, r.Status)
			}
		}
	}
}

// A client that gives up on a lost answer at once warns lost/retried
// (SHOULD) and is not blamed by the MUSTs: it sent no second key.
func TestGivingUpWarns(t *testing.T) {
	call := func(ctx context.Context, base string) (string, error) {
		_, err := postCharge(ctx, base, "once-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"-random-part")
		if err == nil {
			err = errors.New("no id")
		}
		return "", err
	}
	rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Driver: clientcheck.Func(call), Run: []string{"lost/*", "retry/lost-answer"}, Hold: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]scenarios.Status{"lost/retried": scenarios.Warn, "lost/one-execution": scenarios.Skip, "retry/lost-answer": scenarios.Skip}
	for _, r := range rep.Results {
		if r.Status != want[r.ID] {
			t.Errorf("%s: %s (%s), want %s", r.ID, r.Status, r.Reason, want[r.ID])
		}
	}
}

// An HTTP operation's configured response: is what the stand-in answers
// each execution with, its status and body, a fresh id into the "{id}" at
// id_pointer; a retry gets the same answer replayed.
func TestConfiguredResponse(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "charges.yaml")
	yaml := "base_url: http://127.0.0.1:1\nprincipals: [{name: a, headers: {Authorization: Bearer a}}]\n" +
		"operations: [{name: charges, method: POST, path: /v1/charges, body: {amount: 1000, currency: usd}, id_pointer: /id,\n" +
		"  response: {status: 200, body: {object: charge, id: 'ch_{id}', status: succeeded}}}]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tgt, profile, err := apispec.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tgt, Profile: profile, Driver: refDriver{}, Subject: "refclient",
		Run: []string{"lost/one-execution", "retry/lost-answer"}, Hold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != scenarios.Pass {
			t.Errorf("%s: %s: %s", r.ID, r.Status, r.Reason)
		}
		if r.ID != "lost/one-execution" {
			continue
		}
		if !strings.Contains(r.Observed, "the client reported ch_id_") {
			t.Errorf("observed %q: want the client to report the templated id ch_id_…", r.Observed)
		}
		answered := 0
		for _, x := range r.Exchanges {
			if x.Response != nil && x.Response.Status == http.StatusOK && strings.Contains(string(x.Response.Body), `"object":"charge"`) {
				answered++
			}
		}
		if answered == 0 {
			t.Errorf("no answer 200 with the configured body among %d attempts", len(r.Exchanges))
		}
	}
}

// key/unique-parallel is provoked only by calls in flight at once: a
// client that serialises its calls (a lock around each) with distinct
// keys is inconclusive, never a pass; with one key it fails all the same.
func TestParallelNeedsOverlap(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func() string
		want scenarios.Status
	}{
		{"distinct-keys", func() string { return "serial-" + strconv.FormatInt(rand.Int64(), 36) + "-random-part" }, scenarios.Inconclusive},
		{"one-key", func() string { return "the-one-key" }, scenarios.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			call := func(ctx context.Context, base string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				status, err := postCharge(ctx, base, tc.key())
				if err != nil || status/100 != 2 {
					return "", fmt.Errorf("status %d: %v", status, err)
				}
				return "ok", nil
			}
			rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Driver: clientcheck.Func(call), Run: []string{"key/unique-parallel"}})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Status != tc.want {
				t.Errorf("%s: %s (%s%s), want %s", r.ID, r.Status, r.Observed, r.Reason, tc.want)
			}
		})
	}
}
