package memstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"hash/maphash"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

const shardCount = 64

// Store is a sharded in-memory reference.Store. The zero value is not
// usable; call New.
type Store struct {
	seed   maphash.Seed
	shards [shardCount]shard
	now    func() time.Time

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	outbox outbox
}

type shard struct {
	mu      sync.Mutex
	records map[reference.Scope]*reference.Record
}

// Option configures a Store.
type Option func(*config)

type config struct {
	now        func() time.Time
	sweepEvery time.Duration
}

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithSweepInterval sets how often expired records are evicted (default 1s).
func WithSweepInterval(d time.Duration) Option { return func(c *config) { c.sweepEvery = d } }

// New starts a Store and its sweeper; Close stops the sweeper.
func New(opts ...Option) *Store {
	c := config{now: time.Now, sweepEvery: time.Second}
	for _, o := range opts {
		o(&c)
	}
	if c.sweepEvery <= 0 {
		c.sweepEvery = time.Second
	}
	s := &Store{seed: maphash.MakeSeed(), now: c.now, stop: make(chan struct{}), done: make(chan struct{})}
	for i := range s.shards {
		s.shards[i].records = make(map[reference.Scope]*reference.Record)
	}
	go s.sweepLoop(c.sweepEvery)
	return s
}

func (s *Store) shardOf(sc reference.Scope) *shard {
	// The key alone picks the shard: it is what tells scopes apart, and one
	// string hashes in a fraction of the whole scope's time.
	return &s.shards[maphash.String(s.seed, sc.Key)%shardCount]
}

// live reports whether rec still holds its scope at now.
func live(rec *reference.Record, now time.Time) bool {
	if !now.Before(rec.ExpiresAt) {
		return false
	}
	return rec.State == reference.Completed || now.Before(rec.LockedUntil)
}

// Claim implements reference.Store.
func (s *Store) Claim(ctx context.Context, req reference.ClaimRequest) (reference.Claim, error) {
	if err := ctx.Err(); err != nil {
		return reference.Claim{}, err
	}
	now := s.now()
	sh := s.shardOf(req.Scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if rec, ok := sh.records[req.Scope]; ok && live(rec, now) {
		cp := *rec
		return reference.Claim{Outcome: reference.Existing, Record: &cp}, nil
	}
	token := newToken()
	sh.records[req.Scope] = &reference.Record{
		State:       reference.InFlight,
		Fingerprint: req.Fingerprint,
		RawHash:     req.RawHash,
		Token:       token,
		CreatedAt:   now,
		LockedUntil: now.Add(req.Lease),
		ExpiresAt:   now.Add(req.TTL),
	}
	return reference.Claim{Outcome: reference.Claimed, Token: token}, nil
}

// Complete implements reference.Store.
func (s *Store) Complete(ctx context.Context, scope reference.Scope, token string, resp reference.Response) error {
	return s.CompleteWithEvents(ctx, scope, token, resp, nil)
}

// CompleteWithEvents implements reference.EventStore: the events join the
// outbox inside the record's critical section, so a relay never sees an
// event whose outcome is not stored.
func (s *Store) CompleteWithEvents(ctx context.Context, scope reference.Scope, token string, resp reference.Response, events []reference.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shardOf(scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err := s.completeLocked(sh, scope, token, resp); err != nil {
		return err
	}
	s.outbox.append(events)
	return nil
}

// completeLocked completes scope's record; sh.mu held.
func (s *Store) completeLocked(sh *shard, scope reference.Scope, token string, resp reference.Response) error {
	rec, ok := sh.records[scope]
	if !ok || rec.Token != token || rec.State != reference.InFlight {
		return reference.ErrNotOwner
	}
	// Replace rather than mutate: Peek's readers hold the old pointer.
	done := *rec
	done.State = reference.Completed
	done.Response = resp
	sh.records[scope] = &done
	return nil
}

// Release implements reference.Store.
func (s *Store) Release(ctx context.Context, scope reference.Scope, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shardOf(scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec, ok := sh.records[scope]
	if !ok || rec.Token != token || rec.State != reference.InFlight {
		return reference.ErrNotOwner
	}
	delete(sh.records, scope)
	return nil
}

// Lookup implements reference.Store: a copy of what Peek reads.
func (s *Store) Lookup(ctx context.Context, scope reference.Scope) (*reference.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec := s.Peek(scope)
	if rec == nil {
		return nil, nil
	}
	cp := *rec
	return &cp, nil
}

// Len counts the records held, live or not yet evicted.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.records)
		sh.mu.Unlock()
	}
	return n
}

// Sweep evicts every expired record now. The sweeper calls it; tests may too.
func (s *Store) Sweep() {
	now := s.now()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, rec := range sh.records {
			// A record past its TTL is dead whatever its state; an in-flight
			// record past its lease stays until its TTL, since Claim simply
			// replaces it.
			if !now.Before(rec.ExpiresAt) {
				delete(sh.records, k)
			}
		}
		sh.mu.Unlock()
	}
}

func (s *Store) sweepLoop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Close stops the sweeper and waits for it. It is safe to call twice.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Peek implements reference.Local: a map read, no copy. Records are
// replaced, never changed in place (completeLocked), so a peeked one stays
// as it was read.
func (s *Store) Peek(scope reference.Scope) *reference.Record {
	now := s.now()
	sh := s.shardOf(scope)
	sh.mu.Lock()
	rec, ok := sh.records[scope]
	sh.mu.Unlock()
	if !ok || !live(rec, now) {
		return nil
	}
	return rec
}

var (
	_ reference.Local      = (*Store)(nil)
	_ reference.EventStore = (*Store)(nil)
)
