package demo

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/outbox"
)

// eventBody is the JSON payload of a charge.created or refund.created
// event. The id and the idempotency key are in it as well as in the
// message's headers.
type eventBody struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	IdempotencyKey string `json:"idempotency_key"`
	Data           Charge `json:"data"`
}

// events is the app's event side: the broker publisher and the relay that
// feeds it from the store's outbox.
type events struct {
	pub     reference.Publisher
	store   reference.EventStore
	relay   *outbox.Relay
	outside bool // event-outside-tx defect
	decline bool // event-for-decline defect
	// firstIDs: the first resource id announced per key, under the
	// stale-id-after-expiry defect (nil otherwise).
	mu       sync.Mutex
	firstIDs map[string]string
}

// maxFirstIDs bounds firstIDs: past it the map starts over.
const maxFirstIDs = 1 << 16

// startEvents sets up publishing through store's outbox.
func startEvents(pub reference.Publisher, store reference.Store, defects []reference.Defect) (*events, error) {
	es, ok := store.(reference.EventStore)
	if !ok {
		return nil, errors.New("demo: events need a store with an outbox (memory, postgres, redis)")
	}
	e := &events{pub: pub, store: es, relay: outbox.NewRelay(es, pub, defects...),
		outside: slices.Contains(defects, reference.EventOutsideTx), decline: slices.Contains(defects, reference.EventForDecline)}
	if slices.Contains(defects, reference.StaleIDAfterExpiry) {
		e.firstIDs = map[string]string{}
	}
	return e, nil
}

// stale is the stale-id-after-expiry defect: c with the id the key's
// first execution announced.
func (e *events) stale(key string, c Charge) Charge {
	if e.firstIDs == nil || key == "" {
		return c
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, ok := e.firstIDs[key]; ok {
		c.ID = id
		return c
	}
	if len(e.firstIDs) >= maxFirstIDs {
		clear(e.firstIDs)
	}
	e.firstIDs[key] = c.ID
	return c
}

// declined is the event-for-decline defect: a decline announced as if it
// were an outcome that changed something.
func (e *events) declined(ctx context.Context, key string, c Charge) {
	if e == nil || !e.decline {
		return
	}
	id := "evt_" + randomID()
	typ := c.Object + ".declined"
	payload, _ := json.Marshal(eventBody{ID: id, Type: typ, IdempotencyKey: key, Data: c}) // plain fields: cannot fail
	ev := reference.Event{ID: id, Key: key, Type: typ, Payload: payload}
	if !reference.Emit(ctx, ev) {
		_ = e.store.AppendEvents(context.WithoutCancel(ctx), []reference.Event{ev})
	}
}

func (e *events) close() {
	if e != nil {
		e.relay.Close()
	}
}

// chargeEvent is the event of creating c under key.
func chargeEvent(key string, c Charge) reference.Event {
	id := "evt_" + randomID()
	typ := c.Object + ".created"
	payload, _ := json.Marshal(eventBody{ID: id, Type: typ, IdempotencyKey: key, Data: c}) // plain fields: cannot fail
	return reference.Event{ID: id, Key: key, Type: typ, Payload: payload}
}

// emit publishes the event of an execution that created c: into the
// outbox with the request's outcome, or, for a request without a record
// (no key), into the outbox alone.
func (e *events) emit(ctx context.Context, key string, c Charge) {
	if e == nil {
		return
	}
	ev := chargeEvent(key, e.stale(key, c))
	if e.outside {
		// The defect: straight to the broker, before the outcome is
		// stored; a failure to publish loses the event.
		_ = e.pub.Publish(ctx, ev)
		return
	}
	if !reference.Emit(ctx, ev) {
		_ = e.store.AppendEvents(context.WithoutCancel(ctx), []reference.Event{ev})
	}
}

// onReplay is the event-on-replay defect: after a replayed 2xx, the
// charge in the replayed body is announced once more.
func (e *events) onReplay(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &captureWriter{statusWriter: statusWriter{ResponseWriter: w}}
		next.ServeHTTP(cw, r)
		if cw.Header().Get("Idempotent-Replayed") != "true" || cw.status/100 != 2 {
			return
		}
		var c Charge
		if json.Unmarshal(cw.body, &c) == nil && c.ID != "" {
			_ = e.store.AppendEvents(context.WithoutCancel(r.Context()), []reference.Event{chargeEvent(effectKey(r), c)})
		}
	})
}

// captureWriter keeps a copy of the body written through it.
type captureWriter struct {
	statusWriter
	body []byte
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.body = append(w.body, b...)
	return w.statusWriter.Write(b)
}
