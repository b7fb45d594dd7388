package demo

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// Options configures the demo app. Zero values pick the defaults.
type Options struct {
	Store       reference.Store // nil: a new memory store, closed by Close
	Ledger      Ledger          // nil: a memory ledger
	TTL, Lease  time.Duration   // 0: 24h, 30s
	Defects     []string        // defect names (DefectNames)
	KeyOptional bool            // requests without a key run unprotected
	MaxBody     int64           // 0: 1 MiB
	// FingerprintHeaders are the request fields that are part of a
	// request's identity besides the query; nil: DefaultFingerprintHeaders.
	FingerprintHeaders []string
	// CheckThenInsertGap widens the check-then-insert defect's window
	// (0: the reference's 1 ms).
	CheckThenInsertGap time.Duration
	// FailedKeyLocked keeps a crashed or timed-out request's key in flight
	// until it expires (Whop's choice: reference.WithFailedKeyLocked).
	FailedKeyLocked bool
	// TombstoneOver stores answers with longer bodies as a 413 tombstone
	// (reference.WithLargeTombstone; 0: every answer is stored whole).
	TombstoneOver int64
	// Events, when set, publishes a charge.created (refund.created) event
	// per execution through the store's outbox: a relay moves it to this
	// publisher. The app does not close it.
	Events reference.Publisher
}

// App is the demo API; it implements http.Handler.
type App struct {
	handler   http.Handler
	store     reference.Store
	ownsStore bool
	ledger    Ledger
	effects   *effects
	maxBody   int64
	// undoable: the ledger commits with the record, so a run the store
	// rolled back is taken back from the oracle (serveUndoable).
	undoable bool
	events   *events // nil: no events published
	states   states  // the operations on an existing charge (updates.go)
}

const (
	opCharges = "charges"
	opRefunds = "refunds"
)

// DefaultFingerprintHeaders: the demo's API version field, which changes
// the answer (api_version in the resource), so the same key under another
// version is another request.
var DefaultFingerprintHeaders = []string{apiVersionHeader}

const apiVersionHeader = "Api-Version"

// New builds the app. The error names an unknown defect.
func New(o Options) (*App, error) {
	defects, err := reference.ParseDefects(o.Defects)
	if err != nil {
		return nil, err
	}
	if o.TTL < 0 || o.Lease < 0 || o.MaxBody < 0 {
		return nil, errors.New("demo: TTL, lease and max body must not be negative")
	}
	ttl, lease := o.TTL, o.Lease
	if ttl == 0 {
		ttl = reference.DefaultTTL
	}
	if lease == 0 {
		lease = reference.DefaultLease
	}
	a := &App{store: o.Store, ledger: o.Ledger, effects: newEffects(ttl, lease), maxBody: o.MaxBody, states: states{byID: map[string]*chargeState{}}}
	if a.maxBody == 0 {
		a.maxBody = reference.DefaultMaxBody
	}
	if a.store == nil {
		a.store = memstore.New()
		a.ownsStore = true
	}
	if a.ledger == nil {
		a.ledger = NewMemoryLedger()
	}
	if c, ok := a.ledger.(CommitsWithRecord); ok && c.CommitsWithRecord() {
		a.undoable = true
	}
	if o.Events != nil {
		if a.events, err = startEvents(o.Events, a.store, defects); err != nil {
			if a.ownsStore {
				_ = a.store.Close()
			}
			return nil, err
		}
	}
	opts := []reference.Option{
		reference.WithPrincipal(bearerUser),
		reference.WithMaxBody(a.maxBody),
		reference.WithDefects(defects...),
	}
	if o.FingerprintHeaders == nil {
		o.FingerprintHeaders = DefaultFingerprintHeaders
	}
	opts = append(opts, reference.WithFingerprintHeaders(o.FingerprintHeaders...))
	if o.TTL > 0 {
		opts = append(opts, reference.WithTTL(o.TTL))
	}
	if o.Lease > 0 {
		opts = append(opts, reference.WithLease(o.Lease))
	}
	if o.KeyOptional {
		opts = append(opts, reference.WithKeyOptional())
	}
	if o.FailedKeyLocked {
		opts = append(opts, reference.WithFailedKeyLocked())
	}
	if o.TombstoneOver > 0 {
		opts = append(opts, reference.WithLargeTombstone(o.TombstoneOver))
	}
	if o.CheckThenInsertGap > 0 {
		opts = append(opts, reference.WithCheckThenInsertGap(o.CheckThenInsertGap))
	}

	api := http.NewServeMux()
	api.HandleFunc("POST /v1/charges", a.create(opCharges, "ch_", "charge"))
	api.HandleFunc("POST /v1/refunds", a.create(opRefunds, "re_", "refund"))
	api.HandleFunc("GET /v1/charges/{id}", a.get("charge"))
	api.HandleFunc("GET /v1/refunds/{id}", a.get("refund"))
	api.HandleFunc("PATCH /v1/charges/{id}", a.onCharge(opUpdates, setDescription))
	api.HandleFunc("POST /v1/charges/{id}/cancel", a.onCharge(opCancels, cancelCharge))
	// Authentication runs before any idempotency work: a 401 never
	// touches, reads or stores a record.
	idem := reference.Middleware(a.store, opts...)(api)
	if a.events != nil && slices.Contains(defects, reference.EventOnReplay) {
		idem = a.events.onReplay(idem)
	}
	protected := requireBearer(idem)

	mux := http.NewServeMux()
	for _, p := range []string{"/v1/charges", "/v1/charges/", "/v1/refunds", "/v1/refunds/"} {
		mux.Handle(p, protected)
	}
	a.onChargeRoutes(mux, defects, idem, api, func(more ...reference.Defect) http.Handler {
		return reference.Middleware(a.store, append(slices.Clone(opts), reference.WithDefects(more...))...)(api)
	})
	mux.Handle("GET /v1/effects", a.effects)
	// The keys' lifetime, advertised as Iceberg's config endpoint does
	// (an ISO 8601 duration), so a client need not be told it.
	lifetime, _ := json.Marshal(map[string]string{"idempotency-key-lifetime": isoSeconds(ttl)})
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(lifetime)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	// Outside the middleware: records hold identity bodies, each answer
	// is coded for the request it answers.
	a.handler = reference.Compress(createsFirst(protected, mux))
	return a, nil
}

// createsFirst sends the two create endpoints' exact paths straight to
// protected, where mux would send them too: the hot path of a replay
// skips the pattern match. Everything else goes through mux.
func createsFirst(protected, mux http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; (p == "/v1/charges" || p == "/v1/refunds") && r.URL.RawPath == "" {
			protected.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}
}

// ServeHTTP bounds the request body, then routes.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > a.maxBody {
		writeProblem(w, http.StatusRequestEntityTooLarge, "request-too-large", "Request body too large", "The request body exceeds the size limit.")
		return
	}
	if r.ContentLength < 0 {
		// A declared length (checked above) already bounds the body: net/http
		// reads no further. Only a body of unknown length needs the bound.
		r.Body = http.MaxBytesReader(w, r.Body, a.maxBody)
	}
	if a.undoable {
		a.serveUndoable(w, r)
		return
	}
	a.handler.ServeHTTP(w, r)
}

// Close releases what New created (the relay, the memory store's sweeper).
func (a *App) Close() error {
	a.events.close()
	if a.ownsStore {
		return a.store.Close()
	}
	return nil
}

// Executing counts an execution of another front end's call under key in
// the effects oracle (GET /v1/effects): a refund when refund is set, else a
// charge. The gRPC reference counts its calls here, so one oracle serves
// both. The returned func marks the execution's end.
func (a *App) Executing(key string, refund bool) (done func()) {
	if refund {
		return a.effects.record(key, opRefunds)
	}
	return a.effects.record(key, opCharges)
}

// DefectNames lists the defect catalog, sorted.
func DefectNames() []string {
	infos := reference.Defects()
	names := make([]string, len(infos))
	for i, d := range infos {
		names[i] = string(d.Defect)
	}
	sort.Strings(names)
	return names
}

// DefectDoc returns what a defect breaks and the requirement it violates.
func DefectDoc(name string) (breaks string, requirement string, ok bool) {
	d, ok := reference.LookupDefect(name)
	return d.Breaks, d.Requirement, ok
}

// bearerUser is the principal: the user named by "Authorization: Bearer <user>".
func bearerUser(r *http.Request) string {
	v := r.Header.Get("Authorization")
	user, ok := strings.CutPrefix(v, "Bearer ")
	if !ok || user == "" || strings.ContainsAny(user, " \t") {
		return ""
	}
	return user
}

func requireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearerUser(r) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="idemcheck"`)
			writeProblem(w, http.StatusUnauthorized, "unauthorized", "Authentication required", "Send Authorization: Bearer <user>.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// DocsURL is where the demo's problem types are documented.
const DocsURL = "https://github.com/idemcheck/idemcheck/blob/main/docs/reference.md"

func writeProblem(w http.ResponseWriter, status int, slug, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": DocsURL + "#" + slug, "title": title, "status": status, "detail": detail,
	})
}

// isoSeconds is d as an ISO 8601 duration in seconds (PT3S, PT86400S).
func isoSeconds(d time.Duration) string {
	return "PT" + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "S"
}
