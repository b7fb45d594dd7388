package bookings

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// apiKeys maps API keys to guests' accounts.
var apiKeys = map[string]string{"key_ann": "ann", "key_ben": "ben"}

// API is the bookings API; it implements http.Handler.
type API struct {
	ttl time.Duration
	mux *http.ServeMux

	mu       sync.Mutex
	keys     map[[4]string]*entry // (account, method, path, key) -> entry
	bookings []booking
}

type booking struct {
	account string
	fields  map[string]any
}

type entry struct {
	sum     [32]byte
	created time.Time
	done    bool
	status  int
	body    []byte
}

// New returns the API keeping idempotency keys for ttl.
func New(ttl time.Duration) *API {
	a := &API{ttl: ttl, mux: http.NewServeMux(), keys: map[[4]string]*entry{}}
	a.mux.HandleFunc("POST /v2/bookings", a.create)
	a.mux.HandleFunc("GET /v2/bookings", a.list)
	return a
}

func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

type request struct {
	Room   string `json:"room"`
	Nights int    `json:"nights"`
	Guest  struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"guest"`
	Reference string `json:"reference"`
}

func (r request) valid() bool {
	switch r.Room {
	case "single", "double", "suite":
	default:
		return false
	}
	return r.Nights >= 1 && r.Nights <= 30 && r.Guest.Name != "" && r.Guest.Email != ""
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	account, ok := apiKeys[r.Header.Get("X-Api-Key")]
	if !ok {
		fail(w, http.StatusUnauthorized, "unauthenticated", "send X-Api-Key")
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
	var req request
	if err != nil || json.Unmarshal(raw, &req) != nil || !req.valid() {
		fail(w, http.StatusBadRequest, "invalid_booking", "want room (single, double, suite), nights 1-30 and a guest with name and email")
		return
	}
	keys := r.Header.Values("X-Idempotency-Key")
	if len(keys) != 1 || keys[0] == "" || len(keys[0]) > 64 {
		fail(w, http.StatusBadRequest, "idempotency_key_required", "send one X-Idempotency-Key of 1-64 characters")
		return
	}
	// The fingerprint is the canonical re-encoding of the body: member
	// order and spacing do not change it.
	var canon any
	_ = json.Unmarshal(raw, &canon)
	c, _ := json.Marshal(canon)
	sum := sha256.Sum256(c)
	k := [4]string{account, r.Method, r.URL.Path, keys[0]}

	a.mu.Lock()
	e, seen := a.keys[k]
	if seen && time.Since(e.created) > a.ttl {
		seen = false
	}
	switch {
	case !seen:
		e = &entry{sum: sum, created: time.Now()}
		a.keys[k] = e
	case e.sum != sum:
		a.mu.Unlock()
		fail(w, http.StatusConflict, "idempotency_key_reused", "this key was used with another body")
		return
	case !e.done:
		a.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusConflict, "idempotency_key_in_use", "a request with this key is still in progress")
		return
	default:
		status, body := e.status, e.body
		a.mu.Unlock()
		w.Header().Set("X-Idempotent-Replay", "true")
		writeJSON(w, status, json.RawMessage(body))
		return
	}
	a.mu.Unlock()

	b := map[string]any{"booking_id": "bk_" + randomHex(), "room": req.Room, "nights": req.Nights,
		"status": "confirmed", "reference": req.Reference, "idempotency_key": keys[0]}
	body, _ := json.Marshal(map[string]any{"booking": b})
	a.mu.Lock()
	a.bookings = append(a.bookings, booking{account, b})
	e.done, e.status, e.body = true, http.StatusCreated, body
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, json.RawMessage(body))
}

// list answers {"data": [...]}: the account's bookings, newest last, each
// with the key it was made with.
func (a *API) list(w http.ResponseWriter, r *http.Request) {
	account, ok := apiKeys[r.Header.Get("X-Api-Key")]
	if !ok {
		fail(w, http.StatusUnauthorized, "unauthenticated", "send X-Api-Key")
		return
	}
	data := []map[string]any{}
	a.mu.Lock()
	for _, b := range a.bookings {
		if b.account == account {
			data = append(data, b.fields)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"data": data})
}

func fail(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
