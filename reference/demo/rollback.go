package demo

import (
	"context"
	"net/http"
)

// CommitsWithRecord is implemented by ledgers whose writes join the
// idempotency store's unit of work (reference.Atomic), so a charge commits
// or rolls back with its record (pgstore.Ledger).
type CommitsWithRecord interface {
	CommitsWithRecord() bool
}

// execution is what the handler tells App.ServeHTTP about its run: which
// execution it counted and the status it answered. Only set up when the
// ledger commits with the record.
type execution struct {
	key, op string
	status  int // 0: the handler did not run to a counted execution
}

type executionKey struct{}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveUndoable runs the request and takes back the oracle's count of an
// execution the store rolled back: the handler answered, the middleware
// then failed to commit the unit (charge and record rolled back together)
// and answered something else instead — 503 "the request was not
// processed". That run left no effect, so it is not an execution; counting
// it would make a retry look like a double execution.
func (a *App) serveUndoable(w http.ResponseWriter, r *http.Request) {
	ex := &execution{}
	sw := &statusWriter{ResponseWriter: w}
	a.handler.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), executionKey{}, ex)))
	if ex.status != 0 && sw.status != ex.status {
		a.effects.undo(ex.key, ex.op)
	}
}

// trackExecution wraps the handler's writer so App.ServeHTTP learns the
// status the handler answered for the execution counted under key and op.
func trackExecution(w http.ResponseWriter, r *http.Request, key, op string) (http.ResponseWriter, func()) {
	ex, ok := r.Context().Value(executionKey{}).(*execution)
	if !ok {
		return w, func() {}
	}
	sw := &statusWriter{ResponseWriter: w}
	return sw, func() { ex.key, ex.op, ex.status = key, op, sw.status }
}
