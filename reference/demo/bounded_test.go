package demo

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestEffectsRetention: the oracle forgets a key only when no record of it
// can exist any more and nothing of it runs, so its memory is bounded by
// the retention window while a double execution inside that window is
// never hidden. Each case is a timeline on a fake clock (TTL 10s, lease
// 5s: retention 10s + 5s + retainSlack).
func TestEffectsRetention(t *testing.T) {
	const ttl, lease = 10 * time.Second, 5 * time.Second
	retain := ttl + lease + retainSlack
	cases := []struct {
		name, explanation string
		run               func(e *effects, clock *time.Time) // runs the timeline
		want              int64                              // charges counted for "k" at the end
	}{
		{"kept inside the window", "a probe just before the retention ends still sees the execution",
			func(e *effects, clock *time.Time) {
				e.record("k", opCharges)()
				*clock = clock.Add(retain - time.Second)
				e.record("other", opCharges)() // triggers a sweep
			}, 1},
		{"forgotten after the window", "once the record is gone the count goes too",
			func(e *effects, clock *time.Time) {
				e.record("k", opCharges)()
				*clock = clock.Add(retain + time.Second)
				e.record("other", opCharges)()
			}, 0},
		{"double execution at the window's edge", "a second execution just inside the window finds the first counted",
			func(e *effects, clock *time.Time) {
				e.record("k", opCharges)()
				*clock = clock.Add(retain - time.Second)
				e.record("k", opCharges)()
			}, 2},
		{"running execution never forgotten", "a handler still running past the window keeps its count (its claim is outstanding)",
			func(e *effects, clock *time.Time) {
				done := e.record("k", opCharges)
				*clock = clock.Add(2 * retain)
				e.record("other", opCharges)()
				done()
			}, 1},
		{"window counted from the end", "a long execution's window starts when it ends (TTL counted from completion)",
			func(e *effects, clock *time.Time) {
				done := e.record("k", opCharges)
				*clock = clock.Add(retain)
				done()
				*clock = clock.Add(retain - time.Second)
				e.record("other", opCharges)()
			}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Unix(1_700_000_000, 0)
			e := newEffects(ttl, lease)
			e.now = func() time.Time { return clock }
			tc.run(e, &clock)
			var got int64
			if c := e.perKey["k"]; c != nil {
				got = c.Charges
			}
			if got != tc.want {
				t.Fatalf("%s: count %d, want %d", tc.explanation, got, tc.want)
			}
		})
	}

	// Bounded: a stream of fresh keys leaves only the window's keys.
	clock := time.Unix(1_700_000_000, 0)
	e := newEffects(ttl, lease)
	e.now = func() time.Time { return clock }
	for i := 0; i < 10_000; i++ {
		e.record(fmt.Sprint("key-", i), opRefunds)()
		clock = clock.Add(100 * time.Millisecond)
	}
	if limit := int(retain/(100*time.Millisecond)) + int(sweepEvery/(100*time.Millisecond)) + 1; len(e.perKey) > limit {
		t.Fatalf("%d keys remembered after 10000 one-off keys, want at most the window's %d", len(e.perKey), limit)
	}
	if e.total.Refunds != 10_000 {
		t.Fatalf("total %d, want every execution counted", e.total.Refunds)
	}
}

// TestMemoryLedgerBounded: the memory ledger keeps the newest charges up
// to its cap and drops the oldest first.
func TestMemoryLedgerBounded(t *testing.T) {
	const limit = 100
	l := newMemoryLedger(limit)
	ctx := context.Background()
	for i := 0; i < limit+30; i++ {
		if err := l.Insert(ctx, Charge{ID: fmt.Sprint("ch_", i), Principal: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.charges) != limit {
		t.Fatalf("%d charges kept, want the cap %d", len(l.charges), limit)
	}
	for i, want := range map[int]bool{0: false, 29: false, 30: true, limit + 29: true} {
		if _, ok, _ := l.Get(ctx, "u", fmt.Sprint("ch_", i)); ok != want {
			t.Fatalf("charge %d present %v, want %v (oldest dropped first)", i, ok, want)
		}
	}
}
