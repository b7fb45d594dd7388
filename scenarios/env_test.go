package scenarios

import (
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestInTTL: a judgment against a retry sent inside the TTL − margin window
// of the original's start stands (however late its answer: a re-executed
// slow variant answers late), and becomes Inconclusive when the retry was
// sent past it; passes stand either way, and without a declared TTL nothing
// changes.
func TestInTTL(t *testing.T) {
	t0 := time.Now()
	orig := wire.Resp{Start: t0, End: t0.Add(100 * time.Millisecond)}
	// at is a retry sent at d that ran the 1.5 s slow variant.
	at := func(d time.Duration) wire.Resp {
		return wire.Resp{Start: t0.Add(d), End: t0.Add(d + 1500*time.Millisecond), Work: 1500 * time.Millisecond}
	}
	fail := Verdict{Status: Fail, Expected: "the replay", Observed: "a new execution"}
	warn := Verdict{Status: Warn, Expected: "the replay", Observed: "another status"}
	pass := Verdict{Status: Pass}
	tests := []struct {
		name    string
		ttl     time.Duration
		v       Verdict
		retries []wire.Resp
		want    Status
	}{
		{"fail sent inside the window stands, though answered after the TTL", 3 * time.Second, fail, []wire.Resp{at(2 * time.Second)}, Fail},
		{"fail sent exactly at TTL − margin stands", 3 * time.Second, fail, []wire.Resp{at(2500 * time.Millisecond)}, Fail},
		{"fail sent past TTL − margin is inconclusive", 3 * time.Second, fail, []wire.Resp{at(2600 * time.Millisecond)}, Inconclusive},
		{"warn past the window is inconclusive", 3 * time.Second, warn, []wire.Resp{at(4 * time.Second)}, Inconclusive},
		{"one late retry among several is enough", 3 * time.Second, fail, []wire.Resp{at(time.Second), at(2600 * time.Millisecond)}, Inconclusive},
		{"a late replay still passes", 3 * time.Second, pass, []wire.Resp{at(4 * time.Second)}, Pass},
		{"no declared TTL: no window", 0, fail, []wire.Resp{at(time.Hour)}, Fail},
		{"a TTL within the margin: every judgment is late", 400 * time.Millisecond, fail, []wire.Resp{at(200 * time.Millisecond)}, Inconclusive},
		// A quick retry (no slow work) answered past the window may have
		// waited in a stalled server until the key expired.
		{"quick retry sent inside but answered past the window is inconclusive", 3 * time.Second, fail, []wire.Resp{{Start: t0.Add(time.Second), End: t0.Add(2600 * time.Millisecond)}}, Inconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Target: &apispec.Target{TTL: tt.ttl}, Profile: &apispec.Profile{Margin: 500 * time.Millisecond}}
			got := e.inTTL(tt.v, orig, tt.retries...)
			if got.Status != tt.want {
				t.Fatalf("inTTL = %s (%s), want %s", got.Status, got.Reason, tt.want)
			}
			if got.Status == Inconclusive && got.Reason == "" {
				t.Fatal("an inconclusive verdict without a reason")
			}
		})
	}
}
