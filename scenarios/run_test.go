package scenarios

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

func TestRunUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	tg, err := apispec.FromURL("http://"+addr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := apispec.ProfileByName("")
	_, err = Run(context.Background(), tg, p, RunOptions{})
	if !errors.Is(err, apispec.ErrUnreachable) {
		t.Fatalf("Run against a closed port: %v, want ErrUnreachable", err)
	}
}

func TestCurl(t *testing.T) {
	x := wire.Exchange{Request: wire.ExchangeRequest{
		Method: "POST", URL: "http://127.0.0.1:8080/v1/charges",
		Header: http.Header{"Idempotency-Key": {`"it's"`}, "X-Empty": {""}},
		Body:   []byte(`{"a":"b'c"}`),
	}}
	want := `curl -i -X POST 'http://127.0.0.1:8080/v1/charges' -H 'Idempotency-Key: "it'\''s"' -H 'X-Empty;' --data-binary '{"a":"b'\''c"}'`
	if got := x.Curl(); got != want {
		t.Errorf("Curl() =\n%s\nwant\n%s", got, want)
	}
}

// TestRunNilProfile: a caller that gives no profile gets the default
// (ietf) instead of a panic.
func TestRunNilProfile(t *testing.T) {
	// Any success passes the normal-request check (CheckNormal).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	tg, err := apispec.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), tg, nil, RunOptions{Run: []string{"missing/rejected"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Profile != apispec.DefaultProfile || len(rep.Results) == 0 {
		t.Fatalf("profile %q, %d results: want the default profile and a result", rep.Profile, len(rep.Results))
	}
}

// TestLongestWait: the wait a run cannot skip, one rule per row.
func TestLongestWait(t *testing.T) {
	tg, err := apispec.FromURL("http://127.0.0.1:1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	slow := tg.Operations[0].Variants[apispec.VariantSlow].Duration
	p, _ := apispec.ProfileByName("")
	for _, tc := range []struct {
		rule       string
		ttl, lease time.Duration
		run        []string
		want       time.Duration
	}{
		{"no waiting case: nothing to wait for", 0, 0, []string{"replay/same-status"}, 0},
		{"an overlap case waits for the slow variant", 0, 0, []string{"concurrent/**"}, slow},
		{"an expiry case waits out TTL plus grace", 3 * time.Second, 0, []string{"expiry/fresh-after-ttl"}, 3*time.Second + p.Grace},
		{"the expired-key burst also waits out its slow original and slow burst", 3 * time.Second, 0, []string{"expiry/**"}, 3*time.Second + p.Grace + 2*slow},
		{"an expiry case past its limit skips: no wait", 10 * time.Minute, 0, []string{"expiry/**"}, 0},
		{"a lease case waits out the lease plus a margin, or its slow variant", 0, 500 * time.Millisecond, []string{"lease/**"}, max(500*time.Millisecond+leaseMargin, slow)},
		{"a lease case the slow variant does not outlive skips: no wait", 0, 4 * time.Second, []string{"lease/**"}, 0},
		{"unsupplied instances do not count", 0, 0, []string{"expiry/**"}, 0},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			c := *tg
			c.TTL, c.Lease = tc.ttl, tc.lease
			planned, err := Plan(&c, p, RunOptions{Run: tc.run})
			if err != nil {
				t.Fatal(err)
			}
			if got := LongestWait(&c, p, planned); got != tc.want {
				t.Errorf("rule: %s: %s, want %s", tc.rule, got, tc.want)
			}
		})
	}
}

// TestAttempts: an instance whose verdict is a missed timing (Env.Missed)
// runs again under fresh keys, up to RunOptions.Attempts; every other
// verdict is final. One rule per row; each attempt sends one real request,
// and every attempt's exchange is kept.
func TestAttempts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	tg, err := apispec.FromURL(srv.URL, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := apispec.ProfileByName("")
	client := wire.Client(tg, tg.Timeout)
	defer client.CloseIdleConnections()
	keys := wire.NewKeys(tg, client, func(uint64) string { return p.NewKey() })
	s := &session{t: tg, p: p, carrier: wire.NewCarrier(tg, client), timeout: client.Timeout, keys: keys}
	missed := func(e *Env) Verdict { return e.Missed("could not overlap") }
	for _, tc := range []struct {
		rule     string
		attempts int
		script   []func(e *Env) Verdict // one per attempt; the last repeats
		want     Status
		ran      int
	}{
		{"a pass is final", 3, []func(*Env) Verdict{func(e *Env) Verdict { return e.Pass("replayed") }}, Pass, 1},
		{"a fail is final", 3, []func(*Env) Verdict{func(e *Env) Verdict { return e.Fail("1 execution", "2") }}, Fail, 1},
		{"an inconclusive for want of evidence is final", 3, []func(*Env) Verdict{func(e *Env) Verdict { return e.Inconclusive("the slow variant did not succeed") }}, Inconclusive, 1},
		{"a missed timing is tried again, and the next verdict decides", 3, []func(*Env) Verdict{missed, func(e *Env) Verdict { return e.Fail("1 execution", "2") }}, Fail, 2},
		{"a missed timing in every attempt stays inconclusive", 3, []func(*Env) Verdict{missed}, Inconclusive, 3},
		{"attempts 1 never tries again", 1, []func(*Env) Verdict{missed, func(e *Env) Verdict { return e.Pass() }}, Inconclusive, 1},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			var keysSeen []string
			c := Case{Meta: Meta{ID: "test/attempts", Family: "test", Level: Must}, Run: func(ctx context.Context, e *Env) Verdict {
				k := e.NewKey()
				keysSeen = append(keysSeen, k)
				e.Send(ctx, Req{Label: "original", Key: k, Body: e.Op.Body})
				return tc.script[min(len(keysSeen), len(tc.script))-1](e)
			}}
			in := instance{Planned: Planned{Meta: c.Meta, Supplied: true}, c: c, op: &tg.Operations[0]}
			res := runInstance(t.Context(), s, in, nil, RunOptions{Attempts: tc.attempts}.attempts())
			if res.Status != tc.want || len(keysSeen) != tc.ran {
				t.Fatalf("status %s after %d attempts (reason %q), want %s after %d", res.Status, len(keysSeen), res.Reason, tc.want, tc.ran)
			}
			if len(res.Exchanges) != tc.ran {
				t.Errorf("%d exchanges kept, want one per attempt (%d)", len(res.Exchanges), tc.ran)
			}
			if tc.ran > 1 {
				if keysSeen[0] == keysSeen[1] {
					t.Errorf("attempt 2 reused key %s: each attempt needs fresh keys", keysSeen[0])
				}
				if res.Attempts != tc.ran || len(res.Missed) != tc.ran-1 || res.Exchanges[1].Label != "attempt 2: original" {
					t.Errorf("attempts %d, missed %q, second label %q: want %d attempts, %d missed reasons, the label prefixed", res.Attempts, res.Missed, res.Exchanges[1].Label, tc.ran, tc.ran-1)
				}
			}
		})
	}
}
