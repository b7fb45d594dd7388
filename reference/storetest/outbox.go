package storetest

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// OutboxCases is the contract of a reference.EventStore's outbox.
var OutboxCases = []Case{
	{"events-with-outcome", "CompleteWithEvents by the owner stores the outcome and makes its events claimable, in order; by a token that does not own the record it fails with ErrNotOwner and adds no event", eventsWithOutcome},
	{"claim-lease", "claimed events are not claimed again while the claim's lease lasts, and are, with the same ids, once it has ended (a relay that died before marking them sent)", claimLease},
	{"mark-sent", "events marked sent are never claimed again and come back from SentEvents, oldest first; appended events follow the completed ones", markSent},
}

// RunOutbox runs OutboxCases against fresh stores from newStore.
func RunOutbox(t *testing.T, newStore func(t *testing.T) reference.EventStore) {
	t.Helper()
	runCases(t, OutboxCases, func(t *testing.T) reference.Store { return newStore(t) })
}

var eventSeq atomic.Int64

func events(key string, n int) []reference.Event {
	out := make([]reference.Event, n)
	for i := range out {
		seq := eventSeq.Add(1)
		out[i] = reference.Event{ID: fmt.Sprintf("evt_%d", seq), Key: key, Type: "charge.created",
			Payload: fmt.Appendf(nil, `{"n":%d}`, seq)}
	}
	return out
}

func ids(evs []reference.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func sameEvents(t *testing.T, how string, got, want []reference.Event) {
	t.Helper()
	if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
		t.Fatalf("%s: events %v, want %v", how, ids(got), ids(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Type != want[i].Type || string(got[i].Payload) != string(want[i].Payload) {
			t.Fatalf("%s: event %+v, want %+v", how, got[i], want[i])
		}
	}
}

func claimEvents(t *testing.T, s reference.EventStore, n int, lease time.Duration) []reference.Event {
	t.Helper()
	evs, err := s.ClaimEvents(ctx(t), n, lease)
	if err != nil {
		t.Fatalf("ClaimEvents: %v", err)
	}
	return evs
}

func eventsWithOutcome(t *testing.T, s reference.Store) {
	es := s.(reference.EventStore)
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	resp := reference.Response{Status: http.StatusCreated, Body: []byte(`{}`)}
	if err := es.CompleteWithEvents(ctx(t), sc, "not-the-owner", resp, events(sc.Key, 1)); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("CompleteWithEvents by another token: %v, want ErrNotOwner", err)
	}
	if got := claimEvents(t, es, 10, long); len(got) != 0 {
		t.Fatalf("a failed completion left events %v", ids(got))
	}
	want := events(sc.Key, 3)
	if err := es.CompleteWithEvents(ctx(t), sc, tok, resp, want); err != nil {
		t.Fatalf("CompleteWithEvents by the owner: %v", err)
	}
	mustExisting(t, s, req(sc, "fp", long, long), reference.Completed)
	sameEvents(t, "claimed after completion", claimEvents(t, es, 10, long), want)
}

func claimLease(t *testing.T, s reference.Store) {
	es := s.(reference.EventStore)
	want := events("k", 3)
	if err := es.AppendEvents(ctx(t), want); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	sameEvents(t, "first claim, two at most", claimEvents(t, es, 2, short), want[:2])
	sameEvents(t, "second claim while the first's lease lasts", claimEvents(t, es, 10, long), want[2:])
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := claimEvents(t, es, 10, long)
		if len(got) > 0 {
			sameEvents(t, "claim after the lease ended", got, want[:2])
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("events whose claim ended 10s ago are still not claimable")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func markSent(t *testing.T, s reference.Store) {
	es := s.(reference.EventStore)
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	done := events(sc.Key, 2)
	if err := es.CompleteWithEvents(ctx(t), sc, tok, reference.Response{Status: http.StatusCreated}, done); err != nil {
		t.Fatal(err)
	}
	more := events("k", 1)
	if err := es.AppendEvents(ctx(t), more); err != nil {
		t.Fatal(err)
	}
	all := append(done, more...)
	sameEvents(t, "claimed", claimEvents(t, es, 10, short), all)
	if err := es.MarkSent(ctx(t), ids(all)); err != nil {
		t.Fatalf("MarkSent: %v", err)
	}
	time.Sleep(2 * short) // past the claims' lease: only sending keeps them off
	if got := claimEvents(t, es, 10, long); len(got) != 0 {
		t.Fatalf("sent events claimed again: %v", ids(got))
	}
	sent, err := es.SentEvents(ctx(t), 2)
	if err != nil {
		t.Fatalf("SentEvents: %v", err)
	}
	sameEvents(t, "the latest two sent", sent, all[1:])
}
