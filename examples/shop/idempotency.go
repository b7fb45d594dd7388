package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/gowebpki/jcs"
)

// keyHeader is the draft's header; its value is an sf-string ("...").
const keyHeader = "Idempotency-Key"

// maxKeyLen bounds a key; a longer one is refused, never truncated.
const maxKeyLen = 255

// lapsedLease is the lease-lapses build's lease: shorter than a provider
// call may take.
const lapsedLease = time.Second

// errKey is why a key field was refused (400).
var errKey = errors.New("Idempotency-Key must be one sf-string (a quoted string) of 1 to 255 characters, not all blank, without parameters")

// parseKey reads the key from the request's field lines: missing is true
// when there is none; err when it is not one valid sf-string.
func parseKey(lines []string) (key string, missing bool, err error) {
	switch {
	case len(lines) == 0:
		return "", true, nil
	case len(lines) > 1:
		return "", false, errKey
	}
	item, perr := httpsfv.UnmarshalItem(lines)
	if perr != nil {
		return "", false, errKey
	}
	s, ok := item.Value.(string)
	if !ok || strings.TrimSpace(s) == "" || len(s) > maxKeyLen || len(item.Params.Names()) > 0 {
		return "", false, errKey
	}
	return s, false, nil
}

// fingerprint hashes the body's RFC 8785 canonical form: member order and
// insignificant whitespace do not make a request different, any member's
// value does (members the shop ignores included).
func fingerprint(body []byte) ([]byte, error) {
	canon, err := jcs.Transform(body)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	return sum[:], nil
}

// newID is a random identifier with a prefix (ord_, clm_).
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// leaseFor is the lease in-flight claims get in this build.
func (s *shop) leaseFor() time.Duration {
	if s.defect == leaseLapses {
		return lapsedLease
	}
	return s.lease
}

// once runs the order under its key: the first request to claim the key
// places the order and stores its outcome; the others get 409 while it
// runs, 422 if their body differs, and the stored response otherwise.
func (s *shop) once(ctx context.Context, w http.ResponseWriter, sc scope, fp []byte, o orderRequest) {
	owner := newID("clm_")
	// A record seen between the claim and the lookup may be freed
	// meanwhile (released after a 5xx, expired): claim again, a few times.
	for range 3 {
		claimed, err := s.claim(ctx, sc, fp, owner)
		if err != nil {
			s.unavailable(w, "claim", err)
			return
		}
		if claimed {
			s.execute(ctx, w, sc, owner, o)
			return
		}
		rec, err := s.store.lookup(ctx, sc)
		if err != nil {
			s.unavailable(w, "lookup", err)
			return
		}
		if rec == nil || rec.free() {
			continue
		}
		switch {
		case rec.state != completed:
			w.Header().Set("Retry-After", "1")
			problem(w, http.StatusConflict, "idempotency-key-in-use", "Request in progress",
				"a request with this Idempotency-Key is still being processed; retry later", nil)
		case !bytes.Equal(rec.fingerprint, fp):
			if s.defect == executeThen422 {
				// The bug: the order is placed before the body is compared.
				s.place(ctx, sc, o)
			}
			problem(w, http.StatusUnprocessableEntity, "idempotency-key-reused", "Idempotency-Key reused",
				"this Idempotency-Key was used with a different request body", nil)
		default:
			if s.defect == publishOnReplay {
				s.announceAgain(ctx, sc.key, rec.resp)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			write(w, rec.resp)
		}
		return
	}
	s.unavailable(w, "claim", errors.New("the key's record kept changing"))
}

// claim takes the key for owner. The check-then-insert build looks first
// and inserts after, without checking that its insert won.
func (s *shop) claim(ctx context.Context, sc scope, fp []byte, owner string) (bool, error) {
	if s.defect == checkThenInsert {
		rec, err := s.store.lookup(ctx, sc)
		if err != nil || (rec != nil && !rec.free()) {
			return false, err
		}
		// The round trip a database across a network puts between the
		// lookup and the insert (ours is on loopback, where a busy CI
		// machine can serialise a whole burst inside the gap).
		time.Sleep(checkThenInsertGap)
		return true, s.store.insertUnchecked(ctx, sc, fp, owner, s.leaseFor(), s.ttl)
	}
	return s.store.claim(ctx, sc, fp, owner, s.leaseFor(), s.ttl)
}

// execute places the order under the claim it holds and settles the key:
// a payment or a decline is the key's outcome, stored for replay; a
// provider failure is not, and the key is released for a retry.
func (s *shop) execute(ctx context.Context, w http.ResponseWriter, sc scope, owner string, o orderRequest) {
	row := newOrder(sc, o)
	if s.defect == publishBeforeCommit && s.events != nil {
		// The bug: the order is announced as it is placed, so the
		// warehouse starts picking while the card is charged (a charge
		// rarely fails, the reasoning goes). A charge that fails or a
		// crash before the commit leaves an event for an order that was
		// never recorded as paid, and the retry announces it again
		// under another order id.
		announced := row
		announced.Status = "paid"
		if err := s.events.publishNow(ctx, newPaidEvent(announced), sc.key); err != nil {
			slog.Error("shop: event not published", "order", row.OrderID, "err", err)
		}
	}
	row, resp, res := s.attempt(ctx, row, o)
	keep := resp
	if res.outcome == failed || (res.outcome == declined && s.defect == declinesNotStored) {
		keep = nil
	}
	wedge := res.outcome == failed && s.defect == wedges5xx
	var ev *paidEvent
	if res.outcome == paid && s.events != nil && s.defect != publishBeforeCommit {
		e := newPaidEvent(row)
		ev = &e
	}
	kept, err := s.store.finish(ctx, row, ev, sc, owner, keep, s.ttl, wedge)
	if err != nil {
		// The provider was called but nothing could be written: the key
		// stays claimed until its lease ends, and the answer says so.
		slog.Error("shop: order not recorded", "order", row.OrderID, "err", err)
		problem(w, http.StatusInternalServerError, "order-not-recorded", "Order not recorded",
			"the payment provider was called but the order could not be recorded; retry with the same Idempotency-Key after a few seconds",
			map[string]any{"order_id": row.OrderID})
		return
	}
	if keep != nil && !kept {
		slog.Warn("shop: the claim's lease ran out before the order completed; its response is not stored", "order", row.OrderID)
	}
	write(w, resp)
}

// place is the execute-then-422 build's execution outside any claim: the
// order is charged and recorded, its answer dropped.
func (s *shop) place(ctx context.Context, sc scope, o orderRequest) {
	row, _, _ := s.attempt(ctx, newOrder(sc, o), o)
	if err := s.store.insertOrder(ctx, row); err != nil {
		slog.Error("shop: order not recorded", "order", row.OrderID, "err", err)
	}
}

// unavailable answers 503 when the database fails the idempotency work;
// nothing was executed.
func (s *shop) unavailable(w http.ResponseWriter, step string, err error) {
	slog.Error("shop: idempotency store", "step", step, "err", err)
	w.Header().Set("Retry-After", "1")
	problem(w, http.StatusServiceUnavailable, "store-unavailable", "Service Unavailable",
		"the order could not be processed right now; retry with the same Idempotency-Key", nil)
}

// announceAgain is the publish-on-replay build's replay: the client asked
// for its order again, so the order.paid event goes out again (a fresh
// event, as if the order had been paid once more).
func (s *shop) announceAgain(ctx context.Context, key string, resp *stored) {
	var o order
	if s.events == nil || resp.Status != http.StatusCreated || json.Unmarshal(resp.Body, &o) != nil {
		return
	}
	if err := insertEvent(ctx, s.store.pool, newPaidEvent(o), key); err != nil {
		slog.Error("shop: event not written", "order", o.OrderID, "err", err)
	}
}
