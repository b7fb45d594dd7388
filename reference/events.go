package reference

import (
	"context"
	"errors"
	"time"
)

// Event is a message an execution publishes (charge.created). The handler
// emits it with Emit; it is stored with the request's outcome, in the
// store's outbox, and a relay (reference/outbox) publishes it afterwards:
// the transactional outbox, so a crash can neither lose it nor publish it
// for an outcome that was never stored.
type Event struct {
	ID      string // unique; consumers dedupe redeliveries on it
	Key     string // the idempotency key of the execution
	Type    string
	Payload []byte // JSON
}

// Publisher sends one event to a broker (reference/outbox opens one from
// a URL).
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// EventStore is a Store with an outbox.
type EventStore interface {
	Store
	// CompleteWithEvents is Complete that appends events to the outbox in
	// the same atomic step: both or neither.
	CompleteWithEvents(ctx context.Context, scope Scope, token string, resp Response, events []Event) error
	// AppendEvents appends events that belong to no stored outcome (an
	// execution that owns no record, or whose record another took over).
	AppendEvents(ctx context.Context, events []Event) error
	// ClaimEvents returns up to n unsent events, oldest first, that no
	// relay claimed within its lease, and claims them for lease.
	ClaimEvents(ctx context.Context, n int, lease time.Duration) ([]Event, error)
	// MarkSent marks the events with these ids sent.
	MarkSent(ctx context.Context, ids []string) error
	// SentEvents returns up to the n latest sent events, oldest first
	// (the relay-republish defect replays them).
	SentEvents(ctx context.Context, n int) ([]Event, error)
}

// EventUnit is a Unit that commits events with the outcome (outbox rows in
// the same transaction as the record and the effects).
type EventUnit interface {
	AddEvents(events []Event)
}

// Emit queues e as an event of the request being handled: it joins the
// outbox with the request's stored outcome. It reports false when it
// cannot (no keyed request in ctx, or a store without an outbox); the
// caller then appends it to the outbox itself (EventStore.AppendEvents).
func Emit(ctx context.Context, e Event) bool {
	st, ok := ctx.Value(ctxKey{}).(*requestState)
	if !ok || !st.outbox {
		return false
	}
	st.events = append(st.events, e)
	return true
}

// complete stores resp for the claim owned by token, with the request's
// events in the same atomic step when there are any.
func (m *middleware) complete(ctx context.Context, scope Scope, token string, resp Response, events []Event) error {
	if len(events) > 0 && m.events != nil {
		return m.events.CompleteWithEvents(ctx, scope, token, resp, events)
	}
	return m.store.Complete(ctx, scope, token, resp)
}

// appendEvents puts events with no stored outcome in the outbox: their
// execution's effects happened all the same (a store that does not commit
// effects with the record cannot take them back).
func (m *middleware) appendEvents(ctx context.Context, events []Event) {
	if len(events) > 0 && m.events != nil {
		_ = m.events.AppendEvents(ctx, events)
	}
}

// errNoOutbox is what AppendEvents callers get from a store without one.
var errNoOutbox = errors.New("the idempotency store keeps no outbox")

// AppendEvents appends events to store's outbox, failing when the store
// keeps none: for events emitted outside a keyed request.
func AppendEvents(ctx context.Context, store Store, events ...Event) error {
	es, ok := store.(EventStore)
	if !ok {
		return errNoOutbox
	}
	return es.AppendEvents(ctx, events)
}
