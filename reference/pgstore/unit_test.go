package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/demo"
	"github.com/idemcheck/idemcheck/reference/pgstore"
)

// TestUnitOfWork: a unit's effects and the record's completion commit
// together or not at all, case by case.
func TestUnitOfWork(t *testing.T) {
	resp := reference.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"ch_1"}`)}
	cases := []struct {
		name, why string
		// run acts on a claim of sc owned by token and returns Commit's error.
		run       func(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) error
		wantErr   error // nil, ErrNotOwner or ErrUnavailable
		charges   int   // charges of the key afterwards
		completed bool  // the record is completed afterwards
	}{
		{"commit", "the charge and the completed record are written together", func(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) error {
			u, ctx := begin(t, s, sc, token)
			insert(t, ctx, s, sc, "ch_commit")
			return u.Commit(ctx, resp)
		}, nil, 1, true},
		{"rollback", "a rolled-back unit writes nothing; the record stays in flight for the caller to release", func(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) error {
			u, ctx := begin(t, s, sc, token)
			insert(t, ctx, s, sc, "ch_rollback")
			return u.Rollback(ctx)
		}, nil, 0, false},
		{"lost-claim", "the lease ended and another request reclaimed the key: Commit is ErrNotOwner and the charge is not written", func(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) error {
			u, ctx := begin(t, s, sc, token)
			insert(t, ctx, s, sc, "ch_lost")
			if _, err := s.Pool().Exec(ctx, `UPDATE idempotency_records SET token = 'someone-else' WHERE key = $1`, sc.Key); err != nil {
				t.Fatal(err)
			}
			return u.Commit(ctx, resp)
		}, reference.ErrNotOwner, 0, false},
		{"effect-fails", "an effect that fails (a duplicate charge id) fails Commit and the record is not completed", func(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) error {
			u, ctx := begin(t, s, sc, token)
			insert(t, ctx, s, sc, "ch_dup")
			insert(t, ctx, s, sc, "ch_dup")
			return u.Commit(ctx, resp)
		}, reference.ErrUnavailable, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sc := reference.Scope{Principal: "alice", Method: "POST", Path: "/v1/charges", Key: "unit-" + c.name}
			cl, err := s.Claim(ctx, reference.ClaimRequest{Scope: sc, Fingerprint: "fp", Lease: time.Minute, TTL: time.Hour})
			if err != nil || cl.Outcome != reference.Claimed {
				t.Fatalf("claim: %+v %v", cl, err)
			}
			err = c.run(t, s, sc, cl.Token)
			if (c.wantErr == nil) != (err == nil) || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
				t.Fatalf("%s: Commit/Rollback = %v, want %v", c.why, err, c.wantErr)
			}
			n, err := pgstore.NewLedger(s).Count(ctx, sc.Principal, sc.Key)
			if err != nil || n != c.charges {
				t.Errorf("%s: %d charges (%v), want %d", c.why, n, err, c.charges)
			}
			rec, err := s.Lookup(ctx, sc)
			if err != nil || rec == nil || (rec.State == reference.Completed) != c.completed {
				t.Errorf("%s: record %+v (%v), completed want %v", c.why, rec, err, c.completed)
			}
		})
	}
}

func begin(t *testing.T, s *pgstore.Store, sc reference.Scope, token string) (reference.Unit, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	u, ctx, err := s.Begin(ctx, sc, token)
	if err != nil {
		t.Fatal(err)
	}
	return u, ctx
}

func insert(t *testing.T, ctx context.Context, s *pgstore.Store, sc reference.Scope, id string) {
	t.Helper()
	c := demo.Charge{ID: id, Object: "charge", Principal: sc.Principal, Amount: 100, Currency: "usd", IdempotencyKey: sc.Key, Created: time.Now()}
	if err := pgstore.NewLedger(s).Insert(ctx, c); err != nil {
		t.Fatal(err)
	}
}
