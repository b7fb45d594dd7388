package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// keepSent bounds the sent events kept for SentEvents.
const keepSent = 1000

// outbox is the memory store's outbox: unsent events in order, each with
// the end of its relay's claim, and the latest sent ones. It dies with the
// process, like the records it goes with.
type outbox struct {
	mu      sync.Mutex
	pending []*pendingEvent
	sent    []reference.Event // oldest first, at most keepSent
}

type pendingEvent struct {
	ev           reference.Event
	claimedUntil time.Time
}

func (o *outbox) append(events []reference.Event) {
	if len(events) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range events {
		o.pending = append(o.pending, &pendingEvent{ev: e})
	}
}

// AppendEvents implements reference.EventStore.
func (s *Store) AppendEvents(ctx context.Context, events []reference.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.outbox.append(events)
	return nil
}

// ClaimEvents implements reference.EventStore.
func (s *Store) ClaimEvents(ctx context.Context, n int, lease time.Duration) ([]reference.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.now()
	o := &s.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []reference.Event
	for _, p := range o.pending {
		if len(out) == n {
			break
		}
		if now.Before(p.claimedUntil) {
			continue
		}
		p.claimedUntil = now.Add(lease)
		out = append(out, p.ev)
	}
	return out, nil
}

// MarkSent implements reference.EventStore.
func (s *Store) MarkSent(ctx context.Context, ids []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o := &s.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending = slices.DeleteFunc(o.pending, func(p *pendingEvent) bool {
		if !slices.Contains(ids, p.ev.ID) {
			return false
		}
		o.sent = append(o.sent, p.ev)
		return true
	})
	if extra := len(o.sent) - keepSent; extra > 0 {
		o.sent = slices.Delete(o.sent, 0, extra)
	}
	return nil
}

// SentEvents implements reference.EventStore.
func (s *Store) SentEvents(ctx context.Context, n int) ([]reference.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := &s.outbox
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.sent[max(0, len(o.sent)-n):]), nil
}
