package grpcref

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
)

// eventBody is the JSON payload of a payment.created or refund.created
// event, shaped as the HTTP reference's charge.created: the id and the
// key beside the created payment, in protojson (its description, where a
// client may put a reference of its own, included).
type eventBody struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	IdempotencyKey string          `json:"idempotency_key"`
	Data           json.RawMessage `json:"data"`
}

// eventOf is the event of an execution under key that created p; nil
// without events or without a payment (an error created nothing).
func (s *Service) eventOf(key string, refund bool, p *paymentsv1.Payment) []reference.Event {
	if s.outbox == nil || p == nil {
		return nil
	}
	data, err := protojson.Marshal(p)
	if err != nil {
		return nil // a Payment of plain fields always encodes
	}
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	id, typ := "evt_"+hex.EncodeToString(b[:]), "payment.created"
	if refund {
		typ = "refund.created"
	}
	payload, _ := json.Marshal(eventBody{ID: id, Type: typ, IdempotencyKey: key, Data: data}) // plain fields: cannot fail
	return []reference.Event{{ID: id, Key: key, Type: typ, Payload: payload}}
}

// complete stores resp for the claim owned by token, with events in the
// same atomic step (the outbox). When the outcome cannot be stored (the
// lease was taken over, the store failed) the execution happened all the
// same, and its events go to the outbox alone: its effects are not taken
// back.
func (s *Service) complete(ctx context.Context, scope reference.Scope, token string, resp reference.Response, events []reference.Event) error {
	if len(events) == 0 {
		return s.store.Complete(ctx, scope, token, resp)
	}
	err := s.outbox.CompleteWithEvents(ctx, scope, token, resp, events)
	if err != nil {
		s.appendEvents(ctx, events)
	}
	return err
}

// appendEvents puts the events of an execution that stores no outcome
// (no key, or the no-inflight-lock defect) in the outbox.
func (s *Service) appendEvents(ctx context.Context, events []reference.Event) {
	if len(events) > 0 {
		_ = s.outbox.AppendEvents(ctx, events)
	}
}

// onReplay is the event-on-replay defect: a replayed payment is announced
// once more, as if executed again.
func (s *Service) onReplay(ctx context.Context, key string, refund bool, p *paymentsv1.Payment) {
	if s.defects[reference.EventOnReplay] {
		s.appendEvents(ctx, s.eventOf(key, refund, p))
	}
}
