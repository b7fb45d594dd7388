package reference

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Scope identifies one idempotency record. Keys are only unique within a
// scope, so one user can never read or block another user's record.
type Scope struct {
	Principal string
	Method    string
	Path      string
	Key       string
}

// State is the lifecycle stage of a record.
type State int

const (
	// InFlight: claimed by a request whose handler has not finished.
	InFlight State = iota + 1
	// Completed: the handler finished and its response is stored.
	Completed
)

// Response is what a completed record replays.
type Response struct {
	Status int
	Header http.Header // allow-listed headers only
	Body   []byte
}

// Record is the stored state of one scope.
type Record struct {
	State       State
	Fingerprint string
	// RawHash is the hex SHA-256 of the claiming request's body bytes as
	// sent ("" when the claim did not carry one). Equal raw bytes always
	// have equal fingerprints, so a retry whose bytes hash the same is
	// matched without canonicalizing its body.
	RawHash     string
	Token       string // owner of an in-flight claim; fences Complete and Release
	Response    Response
	CreatedAt   time.Time
	LockedUntil time.Time // lease end of an in-flight record
	ExpiresAt   time.Time // TTL end
}

// ClaimOutcome says what Claim did.
type ClaimOutcome int

const (
	// Claimed: the caller owns a fresh in-flight record and must run the
	// handler, then Complete or Release it.
	Claimed ClaimOutcome = iota + 1
	// Existing: a live record (in flight with an unexpired lease, or
	// completed and unexpired) already holds the scope; it is returned.
	Existing
)

// Claim is the result of Store.Claim.
type Claim struct {
	Outcome ClaimOutcome
	Token   string  // set when Claimed
	Record  *Record // set when Existing
}

// ClaimRequest carries what a claim needs.
type ClaimRequest struct {
	Scope       Scope
	Fingerprint string
	RawHash     string        // stored as Record.RawHash
	Lease       time.Duration // how long an in-flight claim stays exclusive
	TTL         time.Duration // how long the record lives (from the claim)
}

// ErrNotOwner is returned by Complete and Release when the token no longer
// owns the record (its lease expired and someone else reclaimed it).
var ErrNotOwner = errors.New("idempotency record is not owned by this token")

// ErrUnavailable wraps store failures (connection lost, timeout). The
// middleware answers 503 for it, never 500.
var ErrUnavailable = errors.New("idempotency store unavailable")

// Store keeps idempotency records. Every method must be atomic with respect
// to the others for the same scope; implementations must be safe for
// concurrent use.
type Store interface {
	// Claim atomically creates an in-flight record when the scope has no
	// live record (none, expired, or in flight with its lease ended), and
	// otherwise returns the live record untouched.
	Claim(ctx context.Context, req ClaimRequest) (Claim, error)
	// Complete stores the response of the claim owned by token and marks
	// the record Completed, keeping its expiry.
	Complete(ctx context.Context, scope Scope, token string, resp Response) error
	// Release deletes the in-flight record owned by token so that a retry
	// executes afresh.
	Release(ctx context.Context, scope Scope, token string) error
	// Lookup returns the live record of a scope, or nil when there is none.
	Lookup(ctx context.Context, scope Scope) (*Record, error)
	// Close releases the store's resources.
	Close() error
}

// Local is implemented by stores that keep their records in process memory,
// where a lookup costs no round trip (memstore). The middleware then looks
// a keyed request up before fingerprinting it: a replay whose body bytes
// equal the original's is answered without canonicalizing the body.
type Local interface {
	Store
	// Peek returns the live record of scope as the store holds it, nil
	// when there is none. Unlike Lookup's copy it is shared with the store
	// and every other reader: read it, never modify it (a store that
	// changes a record replaces it instead).
	Peek(scope Scope) *Record
}

// Atomic is implemented by stores that can commit the handler's side
// effects together with the completed record (PostgreSQL): no crash can
// then leave an effect without its record or a record without its effect.
type Atomic interface {
	// Begin opens a unit of work for the claim owned by token. The handler
	// runs with the returned context; effect writers that share the store's
	// database find the unit in it.
	Begin(ctx context.Context, scope Scope, token string) (Unit, context.Context, error)
}

// Unit is one open unit of work of an Atomic store.
type Unit interface {
	// Commit stores resp as the record's outcome and commits the handler's
	// effects with it.
	Commit(ctx context.Context, resp Response) error
	// Rollback discards the handler's effects; the caller then releases the
	// claim.
	Rollback(ctx context.Context) error
}
