package load

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/wire"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// BenchmarkHitResult measures the per-result path of a hit-mode run: one
// replay read over loopback the way runPhase reads it (the paced client's
// direct send, the run's body limit) and checked against its warm-up
// original. allocs/op
// includes net/http's own; what the check adds is the difference between
// versions (docs/performance.md).
func BenchmarkHitResult(b *testing.B) {
	item := []byte(`{"id":"ch_0123456789","amount":100},`) // 36 bytes
	for _, n := range []int{14, 114, 1820} {               // ≈ 0.5, 4 and 64 KiB
		body := bytes.Repeat(item, n)
		b.Run(fmt.Sprintf("body=%dB", len(body)), func(b *testing.B) { benchHitResult(b, body, false) })
		// The baseline: what a bare vegeta loop does with the same reply
		// (whole body kept, no sums, no check).
		b.Run(fmt.Sprintf("bare/body=%dB", len(body)), func(b *testing.B) { benchHitResult(b, body, true) })
	}
}

func benchHitResult(b *testing.B, body []byte, bare bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// The reference's replay headers (with net/http's Date and
		// Content-Length, eight): the check adds its sums to that map,
		// the bare loop does not.
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Disposition", `inline; filename="charge, ch_0123456789.json"`)
		h.Set("Etag", `"ch_0123456789"`)
		h.Set("Idempotent-Replayed", "true")
		h.Set("Location", "/v1/charges/ch_0123456789")
		h.Set("Vary", "Accept-Encoding")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := defaults()
	c.mode = ModeHit
	c.sums = c.replaySums()
	rt := wire.NewTransport(1)
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()
	c.direct = &directHTTP{rt: rt, timeout: c.timeout}
	col := newCollector(0, 0, 0)
	s := &sink{col: col, recycle: c.sums.recycle} // as Run's
	for _, p := range []Path{warmup, Hit} {
		n, maxBody := uint64(b.N), c.phaseMaxBody()
		if p == warmup || bare {
			n, maxBody = 1, -1 // warmPool keeps whole originals
		}
		if p == Hit {
			n = uint64(b.N)
			b.ReportAllocs()
			b.ResetTimer()
		}
		var atk interface {
			Attack(vegeta.Targeter, vegeta.Pacer, time.Duration, string) <-chan *vegeta.Result
		} = c.attacker(1, 1, maxBody)
		if bare {
			atk = vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(1), vegeta.MaxWorkers(1), vegeta.MaxBody(maxBody))
		}
		tgt := vegeta.Target{Method: http.MethodPost, URL: srv.URL + "/v1/charges#path=" + string(p) + "&key=k"}
		sent := uint64(0)
		tr := func(t *vegeta.Target) error {
			if sent == n { // one worker: no race
				return vegeta.ErrNoTargets
			}
			sent++
			*t = tgt
			return nil
		}
		for r := range atk.Attack(tr, vegeta.Rate{}, 0, string(p)) {
			if r.URL != "" && !bare { // not the targeter running dry
				s.add(r)
			}
		}
	}
	b.StopTimer()
	if rep := col.report(); rep.Violations != 0 || rep.UncheckedHits != 0 {
		b.Fatalf("a faithful replay was flagged: %+v", rep.ViolationList)
	}
}
