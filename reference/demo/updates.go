package demo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// Operations on an existing charge: PATCH /v1/charges/{id} changes its
// description, POST /v1/charges/{id}/cancel cancels it (once: a second
// cancel is 400 charge-already-cancelled). Every execution raises the
// charge's version, so a replay (the stored answer) is told from a new
// execution by the version, never by the id, which every answer shares.
const (
	opUpdates = "updates"
	opCancels = "cancels"
)

// chargeState is what the operations on an existing charge changed.
type chargeState struct {
	version     int64
	description *string
	cancelled   bool
}

// states holds each charge's changes, by id.
type states struct {
	mu   sync.Mutex
	byID map[string]*chargeState
}

// chargeView is a charge as the operations on it answer it.
type chargeView struct {
	Charge
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

// view is c with its changes; s.mu held.
func (s *states) view(c Charge) chargeView {
	st := s.byID[c.ID]
	v := chargeView{Charge: c, Status: "succeeded", Version: 1}
	if st == nil {
		return v
	}
	if st.description != nil {
		v.Description = *st.description
	}
	if st.cancelled {
		v.Status = "cancelled"
	}
	v.Version += st.version
	return v
}

// updateRequest is the body of PATCH /v1/charges/{id} and of a cancel.
type updateRequest struct {
	Description *string `json:"description"`
	Reason      string  `json:"reason"`
	DelayMS     int64   `json:"delay_ms"`
}

// onCharge handles an operation op on the charge named by the path: it
// reads the body, finds the principal's charge, waits delay_ms, applies
// change (false: the charge is already cancelled) and answers the
// charge's new state.
func (a *App) onCharge(op string, change func(st *chargeState, in updateRequest) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in updateRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.DelayMS < 0 || in.DelayMS > maxDelay.Milliseconds() {
			reference.DoNotStore(r)
			writeProblem(w, http.StatusBadRequest, "invalid-request", "Invalid request body", "want a JSON object; delay_ms between 0 and 60000")
			return
		}
		c, ok, err := a.ledger.Get(r.Context(), bearerUser(r), r.PathValue("id"))
		switch {
		case err != nil:
			writeProblem(w, http.StatusServiceUnavailable, "ledger-unavailable", "Ledger unavailable", "Retry with the same key.")
			return
		case !ok || c.Object != "charge":
			reference.DoNotStore(r)
			writeProblem(w, http.StatusNotFound, "not-found", "Not found", "No such charge.")
			return
		}
		key := effectKey(r)
		defer a.effects.record(key, op)()
		if in.DelayMS > 0 {
			t := time.NewTimer(time.Duration(in.DelayMS) * time.Millisecond)
			select {
			case <-r.Context().Done():
				t.Stop()
				writeProblem(w, http.StatusServiceUnavailable, "cancelled", "Request cancelled", "The client went away; nothing was changed.")
				return
			case <-t.C:
			}
		}
		a.states.mu.Lock()
		st := a.states.byID[c.ID]
		if st == nil {
			st = &chargeState{}
			a.states.byID[c.ID] = st
		}
		changed := change(st, in)
		if changed {
			st.version++
		}
		v := a.states.view(c)
		a.states.mu.Unlock()
		if !changed {
			writeProblem(w, http.StatusBadRequest, "charge-already-cancelled", "Charge already cancelled", "This charge was cancelled before.")
			return
		}
		body, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

func setDescription(st *chargeState, in updateRequest) bool {
	st.description = in.Description
	return true
}

func cancelCharge(st *chargeState, _ updateRequest) bool {
	if st.cancelled {
		return false
	}
	st.cancelled = true
	return true
}

// onChargeRoutes are the routes of the operations on an existing charge,
// on the outer mux when a defect of theirs takes them out of the shared
// middleware (idem: the api behind it; api: the bare handlers).
func (a *App) onChargeRoutes(mux *http.ServeMux, defects []reference.Defect, idem, api http.Handler, withDefects func(...reference.Defect) http.Handler) {
	has := func(d reference.Defect) bool {
		for _, x := range defects {
			if x == d {
				return true
			}
		}
		return false
	}
	// Whether a route leaves the shared middleware is tracked by flags, not
	// by comparing handlers: idem may be an http.HandlerFunc, and comparing
	// func values panics.
	update, ownUpdate := idem, false
	if has(reference.UpdateIgnoresFingerprint) {
		update, ownUpdate = withDefects(reference.NoFingerprint), true
	}
	cancel, ownCancel := idem, false
	if has(reference.ActionReexecutes) {
		cancel, ownCancel = api, true // no idempotency: every retry cancels again
	}
	if has(reference.UpdateReplaysCurrentState) {
		update, cancel = a.currentState(update), a.currentState(cancel)
		ownUpdate, ownCancel = true, true
	}
	if ownUpdate {
		mux.Handle("PATCH /v1/charges/{id}", requireBearer(update))
	}
	if ownCancel {
		mux.Handle("POST /v1/charges/{id}/cancel", requireBearer(cancel))
	}
}

// currentState is the update-replays-current-state defect: a replayed
// answer's body is rebuilt from the charge's current state.
func (a *App) currentState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &bufferWriter{header: http.Header{}}
		next.ServeHTTP(bw, r)
		body := bw.body.Bytes()
		if bw.header.Get("Idempotent-Replayed") == "true" && bw.status/100 == 2 {
			if c, ok, err := a.ledger.Get(r.Context(), bearerUser(r), r.PathValue("id")); err == nil && ok {
				a.states.mu.Lock()
				body, _ = json.Marshal(a.states.view(c))
				a.states.mu.Unlock()
			}
		}
		for k, vs := range bw.header {
			w.Header()[k] = vs
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(bw.status)
		_, _ = w.Write(body)
	})
}

// bufferWriter keeps a whole answer until it is looked at.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
