package load

import (
	"fmt"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// lateTolerance is how far behind the rate plan a send may start before it
// counts as delayed.
const lateTolerance = time.Millisecond

// delayedShareLimit is the share of delayed requests above which latency
// thresholds cannot pass: the figures then omit the queueing the users of
// an open-loop workload would have seen (coordinated omission).
const delayedShareLimit = 0.01

// capPacer wraps a phase's pacer to count the sends vegeta's worker cap
// delayed. vegeta hands each tick to a free worker and blocks when all
// max-workers are busy; the pacer is asked for the next tick right after
// the previous one was taken, so the wrapper knows when each tick was due
// and when it left. A tick counts as delayed when it left more than
// lateTolerance after it was due while every worker was busy (a send late
// only because the loader was short of CPU is not blamed on the cap).
// Pace runs on vegeta's single pacing goroutine; the counters are atomic
// because runPhase reads them from another.
type capPacer struct {
	inner    vegeta.Pacer
	maxWork  uint64
	received atomic.Uint64 // results runPhase has taken (frees a worker)
	delayed  atomic.Uint64

	pending bool      // the previous tick is not judged yet
	due     time.Time // when the previous tick was due
}

func (p *capPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	now := time.Now()
	if p.pending {
		p.pending = false
		// hits ticks have been taken; the ones whose results are not back
		// hold a worker. At the cap the previous tick waited for one.
		inFlight := int64(hits) - int64(p.received.Load())
		if now.Sub(p.due) > lateTolerance && inFlight+1 >= int64(p.maxWork) {
			p.delayed.Add(1)
		}
	}
	wait, stop := p.inner.Pace(elapsed, hits)
	if stop {
		return wait, stop
	}
	if wait == 0 && elapsed >= lateTolerance {
		// vegeta's pacers answer 0 for any overdue tick; asking as of
		// lateTolerance ago tells whether it was already due then.
		if w, s := p.inner.Pace(elapsed-lateTolerance, hits); !s && w <= 0 {
			p.due, p.pending = now.Add(-2*lateTolerance), true
			return wait, stop
		}
	}
	p.due, p.pending = now.Add(wait), true // wait < 0: overdue by that much
	return wait, stop
}

// delayedShare is the share of measured requests the worker cap delayed.
func (r *Summary) delayedShare() float64 {
	var n uint64
	for _, s := range r.Paths {
		n += s.Requests
	}
	if n == 0 {
		return 0
	}
	return float64(r.Delayed) / float64(n)
}

// DelayWarning is a one-line warning when the worker cap delayed sends,
// empty otherwise.
func (r *Summary) DelayWarning() string {
	if r.Delayed == 0 {
		return ""
	}
	msg := fmt.Sprintf("warning: %d requests (%.2f%%) left more than %s behind the rate plan because all max-workers were busy; latency omits that wait",
		r.Delayed, 100*r.delayedShare(), lateTolerance)
	if r.LatencyFrom == LatencyFromIntended {
		return fmt.Sprintf("warning: %d requests (%.2f%%) left more than %s behind the rate plan because all max-workers were busy; latency includes that wait (timed from the intended send; raise --max-workers to measure the server alone)",
			r.Delayed, 100*r.delayedShare(), lateTolerance)
	}
	if r.delayedShare() > delayedShareLimit {
		msg += fmt.Sprintf(" — over %.0f%%, so latency thresholds fail (raise --max-workers or lower the rate)", 100*delayedShareLimit)
	}
	return msg
}

// Rate is the planned rate, unchanged.
func (p *capPacer) Rate(elapsed time.Duration) float64 { return p.inner.Rate(elapsed) }

// schedule is a paced phase's rate plan as send times: the offset from
// the attack's start at which its n-th send was due. The pacer is asked
// as paced.go asks it, as of the previous send's due time, so how late
// vegeta's loop ran does not move the schedule. vegeta numbers its
// results (Seq) in the order the sends left, so the n-th result to leave
// is the n-th send due: retime adds how late it left to its latency, and
// HTTP latencies are timed from the intended send as gRPC's are (the
// paced client times from it itself).
type schedule struct {
	p       vegeta.Pacer
	began   time.Time
	at      time.Duration   // due offset of send n-1
	n       uint64          // sends whose due offset is known
	recent  []time.Duration // due offsets of the last scheduleRing sends (a ring once full)
	stopped bool            // the pacer stopped the phase
}

// scheduleRing bounds the due offsets kept: results arrive at most about
// the in-flight sends out of order; one further behind is recomputed.
const scheduleRing = 1 << 16

func newSchedule(p vegeta.Pacer, began time.Time) *schedule {
	return &schedule{p: p, began: began}
}

// due is when send seq was due; ok is false past the pacer's end.
func (s *schedule) due(seq uint64) (time.Duration, bool) {
	for s.n <= seq && s.step() {
	}
	switch {
	case seq >= s.n:
		return 0, false
	case s.n-seq <= uint64(len(s.recent)):
		return s.recent[seq%scheduleRing], true
	}
	// Rare: a result more than scheduleRing sends behind the latest.
	old := &schedule{p: s.p, recent: make([]time.Duration, 0, 1)}
	for old.n <= seq && old.stepUnkept() {
	}
	return old.at, old.n > seq
}

// step works out the next send's due offset and keeps it; false once
// the pacer stopped.
func (s *schedule) step() bool {
	if !s.stepUnkept() {
		return false
	}
	if len(s.recent) < scheduleRing {
		s.recent = append(s.recent, s.at)
	} else {
		s.recent[(s.n-1)%scheduleRing] = s.at
	}
	return true
}

// stepUnkept is step without keeping the offset.
func (s *schedule) stepUnkept() bool {
	if s.stopped {
		return false
	}
	wait, stop := s.p.Pace(s.at, s.n)
	if stop {
		s.stopped = true
		return false
	}
	s.at += wait
	s.n++
	return true
}

// retime adds to r's latency how long after its due time it left.
func (s *schedule) retime(r *vegeta.Result) {
	d, ok := s.due(r.Seq)
	if !ok {
		return
	}
	if late := r.Timestamp.Sub(s.began.Add(d)); late > 0 {
		r.Latency += late
	}
}
