package scenarios

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestUntilDoneWaitsOutInFlightStatuses: the lost-response retries treat
// every in-flight status of the profile (423, 425...) as "not done yet",
// as they do a 409, instead of taking it as the final answer.
func TestUntilDoneWaitsOutInFlightStatuses(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusLocked)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	client := wire.NewClient(5 * time.Second)
	defer client.CloseIdleConnections()
	op := &apispec.Operation{Name: "op", Method: http.MethodPost, Path: "/"}
	p, err := apispec.ProfileByName("lenient") // in_flight_status includes 423
	if err != nil {
		t.Fatal(err)
	}
	tg := &apispec.Target{BaseURL: srv.URL, KeyHeader: "Idempotency-Key", KeySyntax: apispec.Raw}
	e := &Env{Target: tg, Profile: p, Op: op, carrier: wire.HTTP{Target: tg, Client: client}, timeout: client.Timeout}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := e.untilDone(ctx, "retry", "k", nil)
	if last := rs[len(rs)-1]; len(rs) != 3 || last.Status != http.StatusCreated {
		t.Errorf("untilDone stopped after %d answers at %s, want 3 ending in 201 (423 is an in-flight status of the profile)", len(rs), last.String())
	}
}

// TestInTTLSentTime: one time rule, by when a retry can have reached the
// server at the latest (Resp.ReachedBy). A slow retry written inside
// TTL − margin that executed again is a failure however late it was
// answered (the duplicate of no-inflight-lock re-runs the slow variant's
// 1.5 s and answers past the TTL); one written past the window is
// inconclusive; a client stall before the write (Start early, Sent late)
// counts against the client; a quick retry written early but answered
// past the window may have waited in a stalled server's queue until the
// key expired: inconclusive, never a fail.
func TestInTTLSentTime(t *testing.T) {
	e := &Env{Target: &apispec.Target{TTL: 2 * time.Second}, Profile: &apispec.Profile{Margin: 500 * time.Millisecond}}
	t0 := time.Now()
	orig := wire.Resp{Start: t0, End: t0.Add(1500 * time.Millisecond)}
	fail := Verdict{Status: Fail, Expected: "one execution", Observed: "a new execution"}
	late := wire.Resp{Start: t0.Add(1200 * time.Millisecond), Sent: t0.Add(1201 * time.Millisecond), End: t0.Add(2711 * time.Millisecond), Work: 1500 * time.Millisecond}
	queued := late
	queued.Work = 0
	if v := e.inTTL(fail, orig, queued); v.Status != Inconclusive || !strings.Contains(v.Reason, "as late as 2.711s") {
		t.Errorf("quick retry sent at +1.2s, answered at +2.7s (TTL 2s): %s %q, want inconclusive: it may have been read after expiry", v.Status, v.Reason)
	}
	if v := e.inTTL(fail, orig, late); v.Status != Fail {
		t.Errorf("retry sent at +1.2s, answered at +2.7s (TTL 2s): %s %q, want the failure to stand", v.Status, v.Reason)
	}
	stalled := wire.Resp{Start: t0.Add(time.Second), Sent: t0.Add(1600 * time.Millisecond), End: t0.Add(1700 * time.Millisecond)}
	if v := e.inTTL(fail, orig, stalled); v.Status != Inconclusive || !strings.Contains(v.Reason, "as late as 1.7s") {
		t.Errorf("retry started at +1s but written at +1.6s (past TTL − margin 1.5s): %s %q, want inconclusive naming the send time", v.Status, v.Reason)
	}
	unsent := wire.Resp{Start: t0.Add(1600 * time.Millisecond), Err: context.DeadlineExceeded, End: t0.Add(1700 * time.Millisecond)}
	if v := e.inTTL(fail, orig, unsent); v.Status != Inconclusive {
		t.Errorf("retry never written, started past the window: %s, want inconclusive", v.Status)
	}
	if v := e.inTTL(fail, orig, late, stalled); v.Status != Inconclusive {
		t.Errorf("one retry past the window: %s, want inconclusive (judged brings the proof down to those inside)", v.Status)
	}
	if got := e.judged(orig, []wire.Resp{late}, []wire.Resp{late, stalled}); len(got) != 1 || got[0].Sent != late.Sent {
		t.Errorf("judged kept %d requests, want only the re-execution sent inside the window", len(got))
	}
}

// TestLeaseTakeover: a duplicate sent while the original ran and answered
// past the declared lease − margin may have been a legal takeover (the
// machine stalled past the lease): inconclusive, never a fail. One
// answered inside the lease stands, and so does a retry sent after the
// original completed (no lease can excuse it).
func TestLeaseTakeover(t *testing.T) {
	e := &Env{Target: &apispec.Target{TTL: time.Minute, Lease: 5 * time.Second}, Profile: &apispec.Profile{Margin: 500 * time.Millisecond}}
	t0 := time.Now()
	fail := Verdict{Status: Fail, Expected: "exactly 1 execution", Observed: "2 executions"}
	// A burst: every request sent at once, the machine stalled 8 s.
	burst := []wire.Resp{
		{Start: t0, Sent: t0, End: t0.Add(8 * time.Second), Status: 201},
		{Start: t0, Sent: t0.Add(time.Millisecond), End: t0.Add(9 * time.Second), Status: 201},
	}
	if v := e.inTTL(fail, spanOf(burst), burst...); v.Status != Inconclusive || !strings.Contains(v.Reason, "lease") {
		t.Errorf("burst answered 9s after its start, lease 5s: %s %q, want inconclusive naming the lease", v.Status, v.Reason)
	}
	quick := []wire.Resp{
		{Start: t0, Sent: t0, End: t0.Add(1600 * time.Millisecond), Status: 201},
		{Start: t0, Sent: t0, End: t0.Add(20 * time.Millisecond), Status: 201},
	}
	if v := e.inTTL(fail, spanOf(quick), quick...); v.Status != Fail {
		t.Errorf("burst answered within 1.6s, lease 5s: %s %q, want the failure to stand", v.Status, v.Reason)
	}
	orig := wire.Resp{Start: t0, End: t0.Add(time.Second)}
	after := wire.Resp{Start: t0.Add(2 * time.Second), Sent: t0.Add(2 * time.Second), End: t0.Add(7 * time.Second)}
	if v := e.inTTL(fail, orig, after); v.Status != Fail {
		t.Errorf("retry sent after the original completed: %s %q, want the failure to stand", v.Status, v.Reason)
	}
	// Duplicates that executed again: one answered inside the lease proves
	// the failure, another past it does not excuse it.
	inside := wire.Resp{Start: t0, Sent: t0.Add(100 * time.Millisecond), End: t0.Add(2 * time.Second), Status: 201}
	past := wire.Resp{Start: t0, Sent: t0.Add(200 * time.Millisecond), End: t0.Add(6 * time.Second), Status: 201}
	slow := wire.Resp{Start: t0, End: t0.Add(7 * time.Second)}
	if v := e.inTTL(fail, slow, e.judged(slow, []wire.Resp{inside, past}, []wire.Resp{inside, past})...); v.Status != Fail {
		t.Errorf("one re-execution inside the lease: %s %q, want the failure to stand", v.Status, v.Reason)
	}
	e.Target.Lease = 0
	if v := e.inTTL(fail, spanOf(burst), burst...); v.Status != Fail {
		t.Errorf("no lease declared: %s, want the failure to stand", v.Status)
	}
}
