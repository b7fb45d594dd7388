package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
)

// Case is one rule of the contract.
type Case struct {
	Name    string
	Explain string
	Run     func(t *testing.T, s reference.Store)
}

// Cases is the contract, in the order Run runs it.
var Cases = []Case{
	{"one-winner", "many goroutines claiming one free scope at once: exactly one gets Claimed, every other gets the in-flight record", oneWinner},
	{"existing-in-flight", "while a claim is in flight, Claim and Lookup return the live in-flight record with its fingerprint and raw hash, untouched", existingInFlight},
	{"complete-then-replay", "after Complete, Claim and Lookup return the completed record with the stored status, headers and body byte for byte", completeThenReplay},
	{"release-frees-scope", "after Release, the scope is free: Lookup finds nothing and the next Claim wins", releaseFreesScope},
	{"token-fences-complete", "Complete and Release with a token that does not own the record fail with ErrNotOwner and change nothing", tokenFencing},
	{"done-is-final", "a completed record cannot be completed again or released, even by its own token", doneIsFinal},
	{"lease-expiry-reclaim", "an in-flight record whose lease ended is claimable again; the old owner's Complete then fails with ErrNotOwner", leaseExpiryReclaim},
	{"reclaim-one-winner", "many goroutines reclaiming a lease-ended record at once: exactly one wins", reclaimOneWinner},
	{"ttl-expiry", "a completed record past its TTL is gone: Lookup finds nothing and a new Claim wins", ttlExpiry},
	{"scope-parts-independent", "scopes differing only in principal, method, path or key are independent records, even when parts contain separators", scopeIndependence},
	{"record-times", "a claimed record carries CreatedAt, LockedUntil = CreatedAt+Lease and ExpiresAt = CreatedAt+TTL (within clock tolerance)", recordTimes},
}

// Run runs every case against a fresh store from newStore; newStore should
// register its own cleanup (closing the store) with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) reference.Store) {
	t.Helper()
	runCases(t, Cases, newStore)
}

// runCases runs cases, each against a fresh store from newStore, naming
// the rule of a case that failed.
func runCases(t *testing.T, cases []Case, newStore func(t *testing.T) reference.Store) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			s := newStore(t)
			defer func() {
				if t.Failed() {
					t.Logf("rule: %s", c.Explain)
				}
			}()
			c.Run(t, s)
		})
	}
}

var scopeSeq atomic.Int64

// freshScope is a scope no other case touches.
func freshScope() reference.Scope {
	return reference.Scope{Principal: "alice", Method: http.MethodPost, Path: "/v1/charges",
		Key: fmt.Sprintf("storetest-%d-%d", time.Now().UnixNano(), scopeSeq.Add(1))}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func req(sc reference.Scope, fp string, lease, ttl time.Duration) reference.ClaimRequest {
	return reference.ClaimRequest{Scope: sc, Fingerprint: fp, RawHash: "raw-" + fp, Lease: lease, TTL: ttl}
}

const (
	long  = time.Minute
	short = 150 * time.Millisecond
)

func mustClaim(t *testing.T, s reference.Store, r reference.ClaimRequest) string {
	t.Helper()
	c, err := s.Claim(ctx(t), r)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Outcome != reference.Claimed || c.Token == "" {
		t.Fatalf("Claim of a free scope: outcome %v token %q, want Claimed with a token", c.Outcome, c.Token)
	}
	return c.Token
}

func mustExisting(t *testing.T, s reference.Store, r reference.ClaimRequest, want reference.State) *reference.Record {
	t.Helper()
	c, err := s.Claim(ctx(t), r)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if c.Outcome != reference.Existing || c.Record == nil {
		t.Fatalf("Claim of a held scope: outcome %v, want Existing with the record", c.Outcome)
	}
	if c.Record.State != want {
		t.Fatalf("existing record state %v, want %v", c.Record.State, want)
	}
	return c.Record
}

// eventually polls cond every 20 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// race runs n claims of r at once (released together by a barrier) and
// returns the number of winners and the errors.
func race(t *testing.T, s reference.Store, r reference.ClaimRequest, n int) (winners int, others []reference.Claim) {
	t.Helper()
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		mu     sync.Mutex
		errs   []error
		claims []reference.Claim
	)
	c := ctx(t)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			cl, err := s.Claim(c, r)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			claims = append(claims, cl)
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d concurrent claims failed, first: %v", len(errs), n, errs[0])
	}
	for _, cl := range claims {
		if cl.Outcome == reference.Claimed {
			winners++
		} else {
			others = append(others, cl)
		}
	}
	return winners, others
}

func oneWinner(t *testing.T, s reference.Store) {
	r := req(freshScope(), "fp-1", long, long)
	winners, others := race(t, s, r, 32)
	if winners != 1 {
		t.Fatalf("%d goroutines won the claim of one scope, want exactly 1", winners)
	}
	for _, o := range others {
		if o.Outcome != reference.Existing || o.Record == nil || o.Record.State != reference.InFlight || o.Record.Fingerprint != "fp-1" {
			t.Fatalf("a loser got %+v, want Existing with the in-flight record (fingerprint fp-1)", o)
		}
	}
}

func existingInFlight(t *testing.T, s reference.Store) {
	sc := freshScope()
	mustClaim(t, s, req(sc, "fp-a", long, long))
	rec := mustExisting(t, s, req(sc, "fp-b", long, long), reference.InFlight)
	if rec.Fingerprint != "fp-a" || rec.RawHash != "raw-fp-a" {
		t.Fatalf("existing record fingerprint %q raw hash %q, want the first claim's fp-a, raw-fp-a (a second Claim must not overwrite them)", rec.Fingerprint, rec.RawHash)
	}
	got, err := s.Lookup(ctx(t), sc)
	if err != nil || got == nil || got.State != reference.InFlight || got.Fingerprint != "fp-a" || got.RawHash != "raw-fp-a" {
		t.Fatalf("Lookup = %+v, %v; want the in-flight record with fp-a", got, err)
	}
}

func completeThenReplay(t *testing.T, s reference.Store) {
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	want := reference.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/charges/ch_1"}},
		// Not valid UTF-8 and with a NUL: stores must keep bytes, not text.
		Body: []byte("{\"id\":\"ch_1\"}\x00\xff\xfe\n"),
	}
	if err := s.Complete(ctx(t), sc, tok, want); err != nil {
		t.Fatalf("Complete by the owner: %v", err)
	}
	check := func(how string, rec *reference.Record) {
		t.Helper()
		if rec.State != reference.Completed || rec.Fingerprint != "fp" || rec.RawHash != "raw-fp" {
			t.Fatalf("%s: state %v fingerprint %q raw hash %q, want Completed fp raw-fp", how, rec.State, rec.Fingerprint, rec.RawHash)
		}
		got := rec.Response
		if got.Status != want.Status || !bytes.Equal(got.Body, want.Body) ||
			got.Header.Get("Content-Type") != "application/json" || got.Header.Get("Location") != "/v1/charges/ch_1" || len(got.Header) != 2 {
			t.Fatalf("%s: response %d %v %q, want %d %v %q", how, got.Status, got.Header, got.Body, want.Status, want.Header, want.Body)
		}
	}
	check("Claim after Complete", mustExisting(t, s, req(sc, "fp", long, long), reference.Completed))
	rec, err := s.Lookup(ctx(t), sc)
	if err != nil || rec == nil {
		t.Fatalf("Lookup after Complete = %v, %v", rec, err)
	}
	check("Lookup after Complete", rec)
}

func releaseFreesScope(t *testing.T, s reference.Store) {
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	if err := s.Release(ctx(t), sc, tok); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	if rec, err := s.Lookup(ctx(t), sc); err != nil || rec != nil {
		t.Fatalf("Lookup after Release = %+v, %v; want nothing", rec, err)
	}
	mustClaim(t, s, req(sc, "fp-2", long, long))
}

func tokenFencing(t *testing.T, s reference.Store) {
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	if err := s.Complete(ctx(t), sc, tok+"x", reference.Response{Status: 200}); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("Complete with a foreign token = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx(t), sc, "not-"+tok); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("Release with a foreign token = %v, want ErrNotOwner", err)
	}
	mustExisting(t, s, req(sc, "fp", long, long), reference.InFlight)
	if err := s.Complete(ctx(t), freshScope(), tok, reference.Response{Status: 200}); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("Complete of a scope with no record = %v, want ErrNotOwner", err)
	}
}

func doneIsFinal(t *testing.T, s reference.Store) {
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, long))
	if err := s.Complete(ctx(t), sc, tok, reference.Response{Status: 201, Body: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx(t), sc, tok, reference.Response{Status: 500, Body: []byte("second")}); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("second Complete = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx(t), sc, tok); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("Release of a completed record = %v, want ErrNotOwner", err)
	}
	rec := mustExisting(t, s, req(sc, "fp", long, long), reference.Completed)
	if rec.Response.Status != 201 || string(rec.Response.Body) != "first" {
		t.Fatalf("stored response changed to %d %q", rec.Response.Status, rec.Response.Body)
	}
}

func leaseExpiryReclaim(t *testing.T, s reference.Store) {
	sc := freshScope()
	old := mustClaim(t, s, req(sc, "fp", short, long))
	mustExisting(t, s, req(sc, "fp", short, long), reference.InFlight)
	var tok string
	eventually(t, "an in-flight record past its lease is still not claimable", func() bool {
		c, err := s.Claim(ctx(t), req(sc, "fp-new", long, long))
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		tok = c.Token
		return c.Outcome == reference.Claimed
	})
	if tok == old {
		t.Fatal("the reclaim reused the old owner's token; fencing needs a new one")
	}
	if err := s.Complete(ctx(t), sc, old, reference.Response{Status: 201}); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("old owner's Complete after reclaim = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx(t), sc, old); !errors.Is(err, reference.ErrNotOwner) {
		t.Fatalf("old owner's Release after reclaim = %v, want ErrNotOwner", err)
	}
	rec := mustExisting(t, s, req(sc, "fp", long, long), reference.InFlight)
	if rec.Fingerprint != "fp-new" {
		t.Fatalf("reclaimed record fingerprint %q, want the new claim's fp-new", rec.Fingerprint)
	}
	if err := s.Complete(ctx(t), sc, tok, reference.Response{Status: 201}); err != nil {
		t.Fatalf("new owner's Complete: %v", err)
	}
}

func reclaimOneWinner(t *testing.T, s reference.Store) {
	sc := freshScope()
	mustClaim(t, s, req(sc, "fp", short, long))
	eventually(t, "lease never ended", func() bool {
		rec, err := s.Lookup(ctx(t), sc)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		return rec == nil
	})
	winners, _ := race(t, s, req(sc, "fp", long, long), 32)
	if winners != 1 {
		t.Fatalf("%d goroutines reclaimed one lease-ended record, want exactly 1", winners)
	}
}

func ttlExpiry(t *testing.T, s reference.Store) {
	sc := freshScope()
	tok := mustClaim(t, s, req(sc, "fp", long, 300*time.Millisecond))
	if err := s.Complete(ctx(t), sc, tok, reference.Response{Status: 201}); err != nil {
		t.Fatal(err)
	}
	mustExisting(t, s, req(sc, "fp", long, long), reference.Completed)
	eventually(t, "a record past its TTL is still found", func() bool {
		rec, err := s.Lookup(ctx(t), sc)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		return rec == nil
	})
	mustClaim(t, s, req(sc, "fp-2", long, long))
}

func scopeIndependence(t *testing.T, s reference.Store) {
	base := freshScope()
	variants := map[string]reference.Scope{"base": base}
	p := base
	p.Principal = "bob"
	variants["principal"] = p
	m := base
	m.Method = http.MethodPut
	variants["method"] = m
	pa := base
	pa.Path = "/v1/refunds"
	variants["path"] = pa
	k := base
	k.Key += "-other"
	variants["key"] = k
	// Parts that would collide if a store joined them with a separator.
	j1, j2 := base, base
	j1.Principal, j1.Method = "a|b", "c"
	j2.Principal, j2.Method = "a", "b|c"
	variants["joined-1"], variants["joined-2"] = j1, j2
	j3, j4 := base, base
	j3.Path, j3.Key = "/x:y", base.Key
	j4.Path, j4.Key = "/x", "y:"+base.Key
	variants["joined-3"], variants["joined-4"] = j3, j4
	for name, sc := range variants {
		c, err := s.Claim(ctx(t), req(sc, "fp-"+name, long, long))
		if err != nil {
			t.Fatalf("%s: Claim: %v", name, err)
		}
		if c.Outcome != reference.Claimed {
			t.Fatalf("scope %s (%+v) was not independent: got an existing record with fingerprint %q", name, sc, c.Record.Fingerprint)
		}
	}
}

func recordTimes(t *testing.T, s reference.Store) {
	sc := freshScope()
	mustClaim(t, s, req(sc, "fp", 30*time.Second, 10*time.Minute))
	rec := mustExisting(t, s, req(sc, "fp", long, long), reference.InFlight)
	const tol = 2 * time.Second
	near := func(got, want time.Duration) bool { return got > want-tol && got < want+tol }
	if d := time.Until(rec.CreatedAt); d > tol || d < -tol {
		t.Fatalf("CreatedAt %v is %v from now", rec.CreatedAt, d)
	}
	if d := rec.LockedUntil.Sub(rec.CreatedAt); !near(d, 30*time.Second) {
		t.Fatalf("LockedUntil-CreatedAt = %v, want the lease 30s", d)
	}
	if d := rec.ExpiresAt.Sub(rec.CreatedAt); !near(d, 10*time.Minute) {
		t.Fatalf("ExpiresAt-CreatedAt = %v, want the TTL 10m", d)
	}
}
