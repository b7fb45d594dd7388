package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// keyHeader carries the client's idempotency key, raw (not an sf-string).
const keyHeader = "X-Idempotency-Key"

// maxKeyLen bounds a key; longer keys are rejected, never truncated.
const maxKeyLen = 128

// scope is what a key is unique within: the same key from another user or
// on another endpoint is a different key.
type scope struct{ user, method, path, key string }

// entry is one key's record: in flight until resp is set.
type entry struct {
	fingerprint [32]byte
	resp        *stored
	completed   time.Time
}

// stored is a response kept for replay.
type stored struct {
	status int
	header http.Header
	body   []byte
}

// replayedHeaders are the response headers a replay repeats.
var replayedHeaders = []string{"Content-Type", "Location"}

// idempotent keeps one record per scope. Claiming a key and storing its
// response happen under one mutex, so two requests can never both claim.
type idempotent struct {
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	entries map[scope]*entry
}

func newIdempotent(ttl time.Duration) *idempotent {
	return &idempotent{ttl: ttl, now: time.Now, entries: map[scope]*entry{}}
}

// wrap protects next. The request body has already been validated by the
// caller (invalid requests are rejected before any key is recorded), and
// user is the authenticated principal.
func (s *idempotent) wrap(w http.ResponseWriter, r *http.Request, user string, body []byte, next func(http.ResponseWriter)) {
	values := r.Header.Values(keyHeader)
	switch {
	case len(values) == 0:
		problem(w, http.StatusBadRequest, "key-missing", "X-Idempotency-Key is required on this endpoint")
		return
	case len(values) > 1:
		problem(w, http.StatusBadRequest, "key-invalid", "send exactly one X-Idempotency-Key")
		return
	case !validKey(values[0]):
		problem(w, http.StatusBadRequest, "key-invalid", "a key is 1-128 visible ASCII characters")
		return
	}
	sc := scope{user: user, method: r.Method, path: r.URL.Path, key: values[0]}
	fp := fingerprint(body)

	s.mu.Lock()
	e, ok := s.entries[sc]
	if ok && e.resp != nil && s.now().After(e.completed.Add(s.ttl)) {
		delete(s.entries, sc) // retention over: the key is fresh again
		ok = false
	}
	if !ok {
		e = &entry{fingerprint: fp}
		s.entries[sc] = e
	}
	// What the entry says now, read under the lock: its owner completes it
	// under the lock too.
	prev, prevFP := e.resp, e.fingerprint
	s.mu.Unlock()

	if ok {
		switch {
		case prev == nil: // in flight; a changed body gets the same answer
			w.Header().Set("Retry-After", "1")
			problem(w, http.StatusConflict, "in-progress", "a request with this key is still being processed")
		case prevFP != fp:
			problem(w, http.StatusUnprocessableEntity, "key-reused", "this key was used with a different request body")
		default:
			replay(w, prev)
		}
		return
	}

	rec := httptest.NewRecorder()
	done := false
	defer func() {
		if !done { // the handler panicked: forget the claim so a retry can run
			s.mu.Lock()
			delete(s.entries, sc)
			s.mu.Unlock()
		}
	}()
	next(rec)
	resp := &stored{status: rec.Code, header: http.Header{}, body: rec.Body.Bytes()}
	for _, h := range replayedHeaders {
		if v := rec.Header().Values(h); len(v) > 0 {
			resp.header[h] = v
		}
	}
	s.mu.Lock()
	if resp.status >= 500 {
		delete(s.entries, sc) // server errors are not outcomes: a retry runs again
	} else {
		e.resp, e.completed = resp, s.now()
	}
	s.mu.Unlock()
	done = true
	replay(w, resp)
}

func replay(w http.ResponseWriter, resp *stored) {
	for h, v := range resp.header {
		w.Header()[h] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// validKey: 1..maxKeyLen visible ASCII characters, no spaces.
func validKey(k string) bool {
	if k == "" || len(k) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// fingerprint hashes the body's canonical JSON (object keys sorted,
// insignificant whitespace dropped), so reordered fields are the same
// request. The body is valid JSON by the time we get here.
func fingerprint(body []byte) [32]byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return sha256.Sum256(body)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return sha256.Sum256(body)
	}
	return sha256.Sum256(canon)
}
