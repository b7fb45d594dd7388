package load

import (
	"math"
	"strings"
	"testing"
)

// oneLine fails t when a parse error spans lines: the CLI prints it as the
// one-line usage error of exit 2.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("error is not one line: %q", msg)
	}
}

// FuzzParseThreshold: an accepted expression re-parses from its own
// normalized text to the same threshold; errors are one line.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{
		"hit.p99<5ms", "hit.p50/miss.p50<0.5", "violations==0", "miss.success>0.99", "miss.success>=99%",
		"hit.p99.9 <= 1.5s", "contention.max<800us", "hit.p99<800µs", "nokey.rate>100", "hit.p99<5",
		"hit.requests!=NaN", "hit.success>NaN%", "hit.success<-Inf%", "hit.success>Inf", "hit.p99<-5ms", "bogus.p99<5ms", "hit.p42<5ms", "", "<", "hit.p99<5ms\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThreshold(s)
		if err != nil {
			oneLine(t, err)
			return
		}
		if math.IsNaN(th.value) || math.IsInf(th.value, 0) {
			t.Fatalf("%q: value %v accepted", s, th.value)
		}
		again, err := ParseThreshold(th.Expr)
		if err != nil {
			t.Fatalf("%q accepted, its text %q is not: %v", s, th.Expr, err)
		}
		if again.left != th.left || again.op != th.op || again.value != th.value ||
			(again.right == nil) != (th.right == nil) || (th.right != nil && *again.right != *th.right) {
			t.Fatalf("%q re-parses differently: %+v vs %+v", s, th, again)
		}
	})
}

// FuzzParsePlan: an accepted plan re-parses from its String() to the same
// phases, stays within the documented bounds, and sizes its progress
// without panicking; errors are one line.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		"100@10s", "100@10s 1000@30s", "100->2000@60s", "sine(1000,500,10s)@60s", "max@5s", "1000/s@1m",
		"sine(100,100,1s)@1s", "sine(1,0,1ns)@1h", "0@1s", "100@0s", "100@2h", "100->0@1s", "@", "max@", "sine()@1s",
		"100000@1h", "100001@1s", "2000->1@1ns",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlan(s)
		if err != nil {
			oneLine(t, err)
			return
		}
		if len(p) == 0 || len(p) > maxPhases {
			t.Fatalf("%q: %d phases accepted", s, len(p))
		}
		again, err := ParsePlan(p.String())
		if err != nil || len(again) != len(p) {
			t.Fatalf("%q accepted, its text %q is not: %v", s, p.String(), err)
		}
		for i, ph := range p {
			if ph.Duration <= 0 || ph.Duration > maxPhaseDuration {
				t.Fatalf("%q: phase %d duration %s out of bounds", s, i, ph.Duration)
			}
			if again[i].Duration != ph.Duration || again[i].Max != ph.Max || again[i].Pacer != ph.Pacer {
				t.Fatalf("%q: phase %d re-parses differently: %+v vs %+v", s, i, ph, again[i])
			}
			_ = ph.expectedHits()
		}
	})
}
