package grpcref_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/grpcref"
	pb "github.com/idemcheck/idemcheck/reference/grpcref/paymentsv1"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// TestEvents: with Events each execution puts one payment.created event
// in the store's outbox, carrying the key and the payment (its
// description, where a client's marker goes); a replay, a mismatch and an
// invalid call none; with event-on-replay each replay one more. An event
// defect without Events, or Events on a store without an outbox, is
// refused.
func TestEvents(t *testing.T) {
	if _, err := grpcref.New(grpcref.Options{Defects: []reference.Defect{reference.EventOnReplay}}); err == nil {
		t.Error("event-on-replay without Events was accepted")
	}
	for _, tc := range []struct {
		defects []reference.Defect
		want    int // events for the key after an original, two replays, a mismatch
	}{{nil, 1}, {[]reference.Defect{reference.EventOnReplay}, 3}} {
		store := memstore.New()
		t.Cleanup(func() { _ = store.Close() })
		conn, _ := serve(t, grpcref.Options{Store: store, Events: true, Defects: tc.defects})
		c := pb.NewPaymentServiceClient(conn)
		k := uuid.NewString()
		req := payment(k, 1000)
		req.Payment.Description = "ref-1"
		for range 3 {
			if _, err := c.CreatePayment(as(t, "alice"), req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CreatePayment(as(t, "alice"), payment(k, 1001)); err == nil {
			t.Fatal("the mismatch was accepted")
		}
		if _, err := c.CreatePayment(as(t, "alice"), payment(uuid.NewString(), -1)); err == nil {
			t.Fatal("the invalid call was accepted")
		}
		evs, err := store.ClaimEvents(as(t, "alice"), 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != tc.want {
			t.Fatalf("defects %v: %d events in the outbox, want %d: %+v", tc.defects, len(evs), tc.want, evs)
		}
		var body struct {
			Data struct{ Name, Description string } `json:"data"`
		}
		if err := json.Unmarshal(evs[0].Payload, &body); err != nil {
			t.Fatal(err)
		}
		if e := evs[0]; e.Key != k || e.Type != "payment.created" || e.ID == "" || body.Data.Description != "ref-1" || body.Data.Name == "" {
			t.Errorf("event %+v (data %+v): want payment.created under %s with an id, the payment's name and description", e, body.Data, k)
		}
	}
}
