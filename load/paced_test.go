package load

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestPacedOpenModel: with too few workers for the plan (2 workers, a
// 40 ms server, 100/s planned) the paced client keeps the plan's schedule
// (each result stamped with its intended send time, 10 ms apart whatever
// the workers did), counts the sends it held back, and times each from
// its intended send, so the queueing shows in the latency instead of
// being omitted. The server is HTTP on loopback: the client is protocol
// blind (its calls go through the run's http.Client).
func TestPacedOpenModel(t *testing.T) {
	const serverTime = 40 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(serverTime) }))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	a := newPaced(client, 2, 2, 0)
	tr := func(tg *vegeta.Target) error {
		tg.Method, tg.URL = http.MethodGet, srv.URL+"/#path=miss"
		return nil
	}
	var rs []*vegeta.Result
	for r := range a.Attack(tr, vegeta.Rate{Freq: 100, Per: time.Second}, 500*time.Millisecond, "t") {
		rs = append(rs, r)
	}
	// About 25 sends fit in 500 ms through two 40 ms workers.
	if len(rs) < 10 || len(rs) > 51 {
		t.Fatalf("%d results; want 10..51", len(rs))
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
	// The last sends waited about half the run for a worker.
	if worst < 4*serverTime {
		t.Errorf("worst latency %s; want the wait for a worker in it (over %s)", worst, 4*serverTime)
	}
}

// TestPacedClosedLoop: a pacer that paces nothing (the warm-up, max@)
// sends as workers free up until the targeter runs dry, which stops the
// attack; every call's result arrives before the channel closes.
func TestPacedClosedLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var n atomic.Int64
	tr := func(tg *vegeta.Target) error {
		if n.Add(1) > 10 {
			return vegeta.ErrNoTargets
		}
		tg.Method, tg.URL = http.MethodGet, srv.URL+"/#path=warmup"
		return nil
	}
	a := newPaced(client, 3, 3, -1)
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
