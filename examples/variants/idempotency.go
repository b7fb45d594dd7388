package variants

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"
)

// InFlight is how a duplicate is answered while the original still runs.
type InFlight int

const (
	Conflict409 InFlight = iota // 409 + Retry-After (the draft's SHOULD)
	Locked423                   // 423 Locked + Retry-After (issue #42's proposal)
	Block                       // wait for the original, then answer as after it (tolerated, issue #11)
)

// Choices are the deviations from the correct core. The zero value is the
// core: sf-string keys of up to 255 characters, required; scope (user,
// method, path, key); canonical-JSON fingerprint; 409 + Retry-After in
// flight; 422 on a changed body; 2xx and 4xx outcomes kept, 5xx forgotten;
// retention TTL counted from the first request, after which the key is
// fresh; problem+json errors; random string ids.
type Choices struct {
	TTL time.Duration // retention; 0 keeps keys forever

	// Legal choices.
	IntIDs            bool     // ids 1, 2, 3 per table instead of random strings
	InFlight          InFlight // answer to a duplicate in flight
	MismatchStatus    int      // status for a changed body (0: 422)
	StripeErrors      bool     // {"error":{type,message,doc_url}} as application/json
	OptionalKey       bool     // no key: the request just executes
	TTLFromCompletion bool     // retention counted from the stored response
	ExpiredConflict   bool     // after retention: 409 "expired" (key kept), not a fresh key
	UUIDKeys          bool     // keys are bare (unquoted) 36-character UUIDs, nothing else

	// Defects.
	ExecuteOnMismatch bool          // a changed body runs the handler, then gets the mismatch error
	LockLapse         time.Duration // an in-flight claim older than this is taken over (0: never)
	ExecuteMissing    bool          // a request without a key runs the handler, then gets 400
	RacyExpiry        bool          // expired records are deleted by key outside the claim's lock
}

// scope is what a key is unique within.
type scope struct{ user, method, path, key string }

// record is one key's state: in flight until resp is set.
type record struct {
	fingerprint [32]byte
	started     time.Time
	done        chan struct{} // closed once the outcome is stored or released
	resp        *stored
	completed   time.Time
}

type stored struct {
	status int
	header http.Header
	body   []byte
}

type layer struct {
	c       Choices
	mu      sync.Mutex
	records map[scope]*record
}

func newLayer(c Choices) *layer { return &layer{c: c, records: map[scope]*record{}} }

// expired: the record's retention is over.
func (l *layer) expired(rec *record, now time.Time) bool {
	if l.c.TTL <= 0 || rec.resp == nil {
		return false
	}
	from := rec.started
	if l.c.TTLFromCompletion {
		from = rec.completed
	}
	return now.After(from.Add(l.c.TTL))
}

// serve runs handler at most once per scoped key. handler receives the
// key ("" when the request had none).
func (l *layer) serve(w http.ResponseWriter, r *http.Request, user string, body []byte, handler func(http.ResponseWriter, string)) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		if l.c.OptionalKey {
			handler(w, "")
			return
		}
		if l.c.ExecuteMissing {
			handler(httptest.NewRecorder(), "") // the defect: it runs, then is refused
		}
		l.c.fail(w, http.StatusBadRequest, "idempotency_key_missing", "this endpoint requires an Idempotency-Key header")
		return
	}
	key, ok := l.parseKey(values)
	if !ok {
		msg := `send exactly one Idempotency-Key: an sf-string of 1-255 characters ("...")`
		if l.c.UUIDKeys {
			msg = "send exactly one Idempotency-Key: a bare UUID (8-4-4-4-12 hex digits)"
		}
		l.c.fail(w, http.StatusBadRequest, "idempotency_key_invalid", msg)
		return
	}
	sc := scope{user: user, method: r.Method, path: r.URL.Path, key: key}
	fp := fingerprint(body)

	for {
		rec, resp, claimed := l.claim(sc, fp)
		if claimed {
			l.execute(w, sc, rec, key, handler)
			return
		}
		if rec == nil { // retention over under ExpiredConflict
			l.c.fail(w, http.StatusConflict, "idempotency_key_expired", "the result stored for this key has expired; use a new key")
			return
		}
		if resp == nil { // in flight
			switch l.c.InFlight {
			case Block:
				select {
				case <-rec.done:
					continue // decide again now that the original finished
				case <-r.Context().Done():
					return
				}
			case Locked423:
				w.Header().Set("Retry-After", "1")
				l.c.fail(w, http.StatusLocked, "idempotency_key_in_use", "a request with this key is still being processed")
			default:
				w.Header().Set("Retry-After", "1")
				l.c.fail(w, http.StatusConflict, "idempotency_key_in_use", "a request with this key is still being processed")
			}
			return
		}
		if rec.fingerprint != fp {
			if l.c.ExecuteOnMismatch {
				handler(httptest.NewRecorder(), key)
			}
			status := l.c.MismatchStatus
			if status == 0 {
				status = http.StatusUnprocessableEntity
			}
			l.c.fail(w, status, "idempotency_key_reused", "this key was used with a different request body")
			return
		}
		write(w, resp)
		return
	}
}

// claim returns the key's record and its stored response as of now (nil
// in flight), or a new in-flight record it claimed. It returns a nil
// record when the key expired under ExpiredConflict.
func (l *layer) claim(sc scope, fp [32]byte) (rec *record, resp *stored, claimed bool) {
	now := time.Now()
	if l.c.RacyExpiry {
		// The defect: expiry cleanup deletes by key in its own step, a
		// store round trip after it looked, and may delete a record
		// another request claimed meanwhile.
		l.mu.Lock()
		old := l.records[sc]
		stale := old != nil && l.expired(old, now)
		l.mu.Unlock()
		if stale {
			time.Sleep(time.Millisecond)
			l.mu.Lock()
			delete(l.records, sc)
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rec = l.records[sc]
	if rec != nil && l.expired(rec, now) {
		if l.c.ExpiredConflict {
			return nil, nil, false
		}
		rec = nil
	}
	if rec != nil && rec.resp == nil && l.c.LockLapse > 0 && now.Sub(rec.started) > l.c.LockLapse {
		rec = nil // the defect: a claim older than the lock's lifetime counts as abandoned
	}
	if rec != nil {
		return rec, rec.resp, false
	}
	rec = &record{fingerprint: fp, started: now, done: make(chan struct{})}
	l.records[sc] = rec
	return rec, nil, true
}

// execute runs the handler for a claimed record and stores its outcome
// before answering, so a retry after the answer finds it; a 5xx (or a
// panic) releases the key so a retry runs again.
func (l *layer) execute(w http.ResponseWriter, sc scope, rec *record, key string, handler func(http.ResponseWriter, string)) {
	out := httptest.NewRecorder()
	finished := false
	defer func() {
		l.mu.Lock()
		if !finished || out.Code >= 500 {
			if l.records[sc] == rec {
				delete(l.records, sc)
			}
		} else {
			rec.resp = &stored{status: out.Code, header: http.Header{}, body: out.Body.Bytes()}
			for _, h := range []string{"Content-Type", "Location"} {
				if v := out.Header().Values(h); len(v) > 0 {
					rec.resp.header[h] = v
				}
			}
			rec.completed = time.Now()
		}
		close(rec.done)
		l.mu.Unlock()
		if finished {
			for h, v := range out.Header() {
				w.Header()[h] = v
			}
			w.WriteHeader(out.Code)
			_, _ = w.Write(out.Body.Bytes())
		}
	}()
	handler(out, key)
	finished = true
}

func write(w http.ResponseWriter, resp *stored) {
	for h, v := range resp.header {
		w.Header()[h] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

var uuidKey = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// parseKey accepts exactly one field line holding one key: an RFC 9651
// sf-string of 1..255 characters, not all blank, or a bare UUID under UUIDKeys.
func (l *layer) parseKey(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	v := values[0]
	if l.c.UUIDKeys {
		return v, uuidKey.MatchString(v)
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	var key []byte
	for i := 1; i < len(v)-1; i++ {
		ch := v[i]
		switch {
		case ch == '\\':
			i++
			if i == len(v)-1 || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			key = append(key, v[i])
		case ch == '"' || ch < 0x20 || ch > 0x7e:
			return "", false
		default:
			key = append(key, ch)
		}
	}
	k := string(key)
	return k, strings.TrimSpace(k) != "" && len(k) <= 255 // a blank key names nothing
}

// fingerprint hashes the body's canonical JSON (sorted members, no
// insignificant whitespace), so a reordered body is the same request.
func fingerprint(body []byte) [32]byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return sha256.Sum256(body)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return sha256.Sum256(body)
	}
	return sha256.Sum256(canon)
}

func randomHex() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
