package scenarios

import (
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/wire"
)

// One time rule for every case (internal/expiry.SentInside, shared with
// the chaos and load checkers): a request is judged by when it was sent
// (written to the connection, Resp.SentAt), never by when it was answered.
// A retry sent inside TTL − margin of the original's start met a record
// that must still exist, however long the server then took: a re-execution
// it caused (distinct ids, a count) is the server's, whenever it answered.
// A request sent later proves nothing (the key may legally have expired).
//
// The lease is the other declared clock: an in-flight record may be taken
// over once its lease ran out. A duplicate sent while the original still
// ran and answered later than lease − margin after the original started
// may have been handled after the lease ran out (a stalled machine
// stretches every run), so a second execution there is legal takeover,
// not a failure.

// leaseTakeover is an Inconclusive verdict in place of v (a Fail or Warn
// against a second execution) when one of retries may have been a legal
// takeover (pastLease). nil when none can have been.
func (e *Env) leaseTakeover(v Verdict, orig wire.Resp, retries ...wire.Resp) *Verdict {
	for _, r := range retries {
		if !e.pastLease(orig, r) {
			continue
		}
		x := e.Missed(fmt.Sprintf("past the lease: a request sent while the original ran was answered %s after the original started, past the declared lease %s − margin %s, so a second execution may be a legal takeover of an expired lease (a stall stretches every run; would have been %s: expected %s, observed %s)",
			r.End.Sub(orig.Start).Round(time.Millisecond), e.Target.Lease, e.Profile.Margin, v.Status, v.Expected, v.Observed))
		return &x
	}
	return nil
}

// pastLease reports whether r, sent while orig still ran, was answered
// later than the declared lease − margin after orig started: the server
// may have handled it after orig's lease ran out. Never without a lease.
func (e *Env) pastLease(orig, r wire.Resp) bool {
	lease := e.Target.Lease
	running := orig.End.IsZero() || r.SentAt().Before(orig.End)
	return lease > 0 && running && r.End.Sub(orig.Start) > lease-e.Profile.Margin
}

// outlivedLease reports whether orig ran longer than the declared lease −
// margin: the server may have lost its claim mid-run and, legally, not
// stored the outcome. Never without a lease.
func (e *Env) outlivedLease(orig wire.Resp) bool {
	lease := e.Target.Lease
	return lease > 0 && orig.End.Sub(orig.Start) > lease-e.Profile.Margin
}

// spanOf is the stretch of time rs took, as one Resp from the earliest
// start to the latest answer: the original of a burst, whose requests all
// race for one claim.
func spanOf(rs []wire.Resp) wire.Resp {
	s := earliest(rs)
	for _, r := range rs {
		if r.End.After(s.End) {
			s.End = r.End
		}
	}
	return s
}

// judged is the evidence inTTL weighs for a failure: the requests of proof
// (each shown to have executed again) that no declared clock excuses (sent
// inside TTL − margin of orig, not past its lease), when there are any —
// one of them suffices; else all of all, so that a failure seen only where
// a clock may excuse it stays inconclusive.
func (e *Env) judged(orig wire.Resp, proof, all []wire.Resp) []wire.Resp {
	var in []wire.Resp
	for _, r := range proof {
		if e.WithinTTL(orig, r) && !e.pastLease(orig, r) {
			in = append(in, r)
		}
	}
	if len(in) > 0 {
		return in
	}
	return all
}
