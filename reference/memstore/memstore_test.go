package memstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/idemcheck/idemcheck/reference"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a manual clock for lease and TTL arithmetic.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var ctx = context.Background()

func scope(k string) reference.Scope {
	return reference.Scope{Principal: "alice", Method: "POST", Path: "/v1/charges", Key: k}
}

func claim(t *testing.T, s *Store, k string, lease, ttl time.Duration) reference.Claim {
	t.Helper()
	c, err := s.Claim(ctx, reference.ClaimRequest{Scope: scope(k), Fingerprint: "fp", Lease: lease, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStoreRules(t *testing.T) {
	cases := []struct {
		name, rule string
		run        func(t *testing.T, s *Store, c *clock)
	}{
		{"one-winner", "64 goroutines claiming one scope: exactly one Claimed", func(t *testing.T, s *Store, _ *clock) {
			var wins atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 64 {
				wg.Go(func() {
					<-start
					if claim(t, s, "k", time.Minute, time.Hour).Outcome == reference.Claimed {
						wins.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d winners", wins.Load())
			}
		}},
		{"complete-replays", "Complete stores the response; later claims return it untouched", func(t *testing.T, s *Store, _ *clock) {
			c := claim(t, s, "k", time.Minute, time.Hour)
			resp := reference.Response{Status: 201, Body: []byte("x")}
			if err := s.Complete(ctx, scope("k"), c.Token, resp); err != nil {
				t.Fatal(err)
			}
			got := claim(t, s, "k", time.Minute, time.Hour)
			if got.Outcome != reference.Existing || got.Record.State != reference.Completed || got.Record.Response.Status != 201 {
				t.Fatalf("%+v", got)
			}
		}},
		{"token-fencing", "Complete and Release need the owning token of an in-flight record", func(t *testing.T, s *Store, _ *clock) {
			c := claim(t, s, "k", time.Minute, time.Hour)
			if err := s.Complete(ctx, scope("k"), "other", reference.Response{}); !errors.Is(err, reference.ErrNotOwner) {
				t.Fatalf("foreign Complete: %v", err)
			}
			if err := s.Release(ctx, scope("k"), "other"); !errors.Is(err, reference.ErrNotOwner) {
				t.Fatalf("foreign Release: %v", err)
			}
			if err := s.Release(ctx, scope("k"), c.Token); err != nil {
				t.Fatal(err)
			}
			if claim(t, s, "k", time.Minute, time.Hour).Outcome != reference.Claimed {
				t.Fatal("released scope not claimable")
			}
		}},
		{"lease-reclaim", "an in-flight record is reclaimable once its lease ends; the old owner is fenced", func(t *testing.T, s *Store, c *clock) {
			old := claim(t, s, "k", 30*time.Second, time.Hour)
			c.Add(29 * time.Second)
			if claim(t, s, "k", 30*time.Second, time.Hour).Outcome != reference.Existing {
				t.Fatal("reclaimed inside the lease")
			}
			c.Add(2 * time.Second)
			if claim(t, s, "k", 30*time.Second, time.Hour).Outcome != reference.Claimed {
				t.Fatal("not reclaimable after the lease")
			}
			if err := s.Complete(ctx, scope("k"), old.Token, reference.Response{}); !errors.Is(err, reference.ErrNotOwner) {
				t.Fatalf("old owner completed: %v", err)
			}
		}},
		{"ttl", "a completed record lives for its TTL from the claim, then the scope is fresh", func(t *testing.T, s *Store, c *clock) {
			cl := claim(t, s, "k", time.Second, time.Hour)
			_ = s.Complete(ctx, scope("k"), cl.Token, reference.Response{Status: 201})
			c.Add(59 * time.Minute)
			if rec, _ := s.Lookup(ctx, scope("k")); rec == nil {
				t.Fatal("gone before the TTL")
			}
			c.Add(time.Minute)
			if rec, _ := s.Lookup(ctx, scope("k")); rec != nil {
				t.Fatal("alive at the TTL")
			}
			if claim(t, s, "k", time.Second, time.Hour).Outcome != reference.Claimed {
				t.Fatal("expired scope not claimable")
			}
		}},
		{"sweep-evicts", "Sweep drops expired records and keeps live ones", func(t *testing.T, s *Store, c *clock) {
			for i := range 100 {
				claim(t, s, strconv.Itoa(i), time.Second, time.Minute)
			}
			claim(t, s, "live", time.Second, time.Hour)
			c.Add(2 * time.Minute)
			s.Sweep()
			if s.Len() != 1 {
				t.Fatalf("Len = %d after sweep, want 1", s.Len())
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &clock{now: time.Unix(1_000_000, 0)}
			s := New(WithClock(c.Now))
			defer s.Close()
			tc.run(t, s, c)
			if t.Failed() {
				t.Logf("rule: %s", tc.rule)
			}
		})
	}
}

// TestRealExpiryBoundsMemory uses the wall clock and the background
// sweeper: records written with a short TTL disappear on their own.
func TestRealExpiryBoundsMemory(t *testing.T) {
	s := New(WithSweepInterval(20 * time.Millisecond))
	defer s.Close()
	for i := range 10_000 {
		claim(t, s, strconv.Itoa(i), 50*time.Millisecond, 100*time.Millisecond)
	}
	// The last records were written microseconds ago and are still live
	// (earlier ones may already be gone on a slow machine).
	if s.Len() == 0 {
		t.Fatal("no record held right after writing")
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d records left 5s after a 100ms TTL", s.Len())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCloseStopsSweeper(t *testing.T) {
	s := New(WithSweepInterval(time.Millisecond))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	goleak.VerifyNone(t)
}

func TestCancelledContext(t *testing.T) {
	s := New()
	defer s.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Claim(cctx, reference.ClaimRequest{Scope: scope("k"), Lease: time.Second, TTL: time.Second}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
