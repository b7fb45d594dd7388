package load

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestPacedOpenModel: with too few workers for the plan (2 workers, a
// 40 ms server, 100/s planned) the paced client keeps the plan's schedule
// (each result stamped with its intended send time, 10 ms apart whatever
// the workers did), makes every send the plan schedules, late, counts the
// sends it held back, and times each from its intended send, so the
// queueing shows in the latency instead of being omitted. The server is
// HTTP on loopback: the client is protocol blind (its calls go through
// the run's carrier).
func TestPacedOpenModel(t *testing.T) {
	const serverTime = 40 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(serverTime) }))
	defer srv.Close()
	a := newPaced(httpCarrier(t, srv.URL, 5*time.Second), nil, 5*time.Second, 2, 2, 0)
	tr := func(tg *vegeta.Target) error {
		tg.Method, tg.URL = http.MethodGet, srv.URL+"/#path=miss"
		return nil
	}
	var rs []*vegeta.Result
	for r := range a.Attack(tr, vegeta.Rate{Freq: 100, Per: time.Second}, 500*time.Millisecond, "t") {
		rs = append(rs, r)
	}
	// 50 due in 500 ms; about 25 fit through two 40 ms workers, the rest
	// leave late.
	if len(rs) != 50 {
		t.Fatalf("%d results; want the 50 the plan schedules", len(rs))
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Timestamp.Before(rs[j].Timestamp) })
	var worst time.Duration
	for i, r := range rs {
		if r.Code != 200 || r.Error != "" {
			t.Fatalf("result %d: %d %q", i, r.Code, r.Error)
		}
		if gap := r.Timestamp.Sub(rs[0].Timestamp); gap != time.Duration(i)*10*time.Millisecond {
			t.Fatalf("result %d due %s after the first, want %s: the schedule is the plan's", i, gap, time.Duration(i)*10*time.Millisecond)
		}
		worst = max(worst, r.Latency)
	}
	if a.delayed.Load() == 0 {
		t.Errorf("no send counted as delayed, though 2 workers cannot keep 100/s of %s calls", serverTime)
	}
	// The last sends waited about half a second for a worker.
	if worst < 4*serverTime {
		t.Errorf("worst latency %s; want the wait for a worker in it (over %s)", worst, 4*serverTime)
	}
}

// TestPacedAbandons: a send due longer than the timeout when a worker
// frees up is not made (its user would have given up): a transport error
// that still says its path, so the phase ends about a timeout late at
// most instead of draining a backlog call by call.
func TestPacedAbandons(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(40 * time.Millisecond) }))
	defer srv.Close()
	a := newPaced(httpCarrier(t, srv.URL, 100*time.Millisecond), nil, 100*time.Millisecond, 1, 1, 0)
	tr := func(tg *vegeta.Target) error {
		tg.Method, tg.URL = http.MethodGet, srv.URL+"/#path=miss"
		return nil
	}
	began := time.Now()
	sent, abandoned := 0, 0
	for r := range a.Attack(tr, vegeta.Rate{Freq: 100, Per: time.Second}, 600*time.Millisecond, "t") {
		switch {
		case r.Code == 200:
			sent++
		case r.Code == 0 && strings.HasPrefix(r.Error, "not sent: no worker was free within the 100ms timeout") && r.URL != "":
			abandoned++
		case r.Code == 0 && strings.Contains(r.Error, "Client.Timeout exceeded"):
			sent++ // sent; a loaded machine can stretch 40 ms past 100
		default:
			t.Fatalf("result %d %q", r.Code, r.Error)
		}
	}
	// 60 due; one 40 ms worker makes about 25/s of them; the ones due
	// over 100 ms before it frees up are dropped.
	if sent+abandoned != 60 || sent == 0 || abandoned == 0 {
		t.Fatalf("%d sent, %d abandoned; want 60 in all, some of each", sent, abandoned)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("the phase took %s: the backlog was not cut at the timeout", took)
	}
}

// TestPacedClosedLoop: a pacer that paces nothing (the warm-up, max@)
// sends as workers free up until the targeter runs dry, which stops the
// attack; every call's result arrives before the channel closes.
func TestPacedClosedLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	var n atomic.Int64
	tr := func(tg *vegeta.Target) error {
		if n.Add(1) > 10 {
			return vegeta.ErrNoTargets
		}
		tg.Method, tg.URL = http.MethodGet, srv.URL+"/#path=warmup"
		return nil
	}
	a := newPaced(httpCarrier(t, srv.URL, 5*time.Second), nil, 5*time.Second, 3, 3, -1)
	ok := 0
	for r := range a.Attack(tr, vegeta.Rate{Freq: 0}, 0, "w") {
		if r.URL != "" && r.Code == 200 {
			ok++
		}
	}
	if ok != 10 || a.delayed.Load() != 0 {
		t.Fatalf("%d calls answered, %d delayed; want 10 and none (nothing is due in a closed loop)", ok, a.delayed.Load())
	}
}

// httpCarrier is an HTTP carrier to base whose requests are bounded by
// timeout, closed when t ends.
func httpCarrier(t *testing.T, base string, timeout time.Duration) wire.Carrier {
	tg := &apispec.Target{BaseURL: base}
	c := wire.NewCarrier(tg, wire.Client(tg, timeout))
	t.Cleanup(c.Close)
	return c
}
