package reference_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// remote hides memstore's reference.Local, so the middleware takes the
// path of a store with round trips (Claim first, no lookup).
type remote struct{ reference.Store }

func rawHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// TestRawHashMatching: equal bytes match through the raw hash, and every
// other retry is still judged by the canonical fingerprint, on both
// middleware paths (local lookup first; claim first).
func TestRawHashMatching(t *testing.T) {
	const orig = `{"amount":1000,"currency":"usd","ts":1}`
	cases := []struct {
		name, retry string
		replay      bool
		why         string
	}{
		{"same-bytes", orig, true, "raw hashes equal: replayed without canonicalizing"},
		{"reordered", `{"ts":1,"currency":"usd","amount":1000}`, true, "raw hashes differ, canonical forms equal"},
		{"ignored-field-changed", `{"amount":1000,"currency":"usd","ts":2}`, true, "ts is ignored: canonical forms equal"},
		{"value-changed", `{"amount":1001,"currency":"usd","ts":1}`, false, "a different payload is 422 whatever the path"},
		{"whitespace-only", "{\"amount\":1000, \"currency\":\"usd\",\"ts\":1}\n", true, "insignificant whitespace: canonical forms equal"},
	}
	paths := map[string]func(s *memstore.Store) reference.Store{
		"local":  func(s *memstore.Store) reference.Store { return s },
		"remote": func(s *memstore.Store) reference.Store { return remote{s} },
	}
	for pname, wrap := range paths {
		for _, c := range cases {
			t.Run(pname+"/"+c.name, func(t *testing.T) {
				s := memstore.New()
				defer s.Close()
				e := newEnv(t, wrap(s), reference.WithIgnoreFields("ts"))
				first := e.post("k1", orig)
				if first.status != http.StatusCreated {
					t.Fatalf("first: %d %s", first.status, first.body)
				}
				r := e.post("k1", c.retry)
				if c.replay {
					if r.status != first.status || r.body != first.body || !isReplay(r) {
						t.Fatalf("%s: got %d %q replay=%v, want the replay of %q", c.why, r.status, r.body, isReplay(r), first.body)
					}
				} else {
					e.wantProblem(r, http.StatusUnprocessableEntity, 1)
				}
				e.wantExecutions(1)
			})
		}
	}
}

// TestRawHashIsTrusted: a record whose raw hash equals the retry's bytes
// replays even though its canonical fingerprint belongs to no body, and a
// retry with other bytes is judged by that fingerprint (422). It shows the
// raw hash is what matched, on both paths.
func TestRawHashIsTrusted(t *testing.T) {
	for _, local := range []bool{true, false} {
		s := memstore.New()
		var store reference.Store = s
		if !local {
			store = remote{s}
		}
		e := newEnv(t, store)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		sc := reference.Scope{Principal: "Bearer alice", Method: "POST", Path: "/things", Key: "seeded"}
		c, err := s.Claim(ctx, reference.ClaimRequest{Scope: sc, Fingerprint: "no-body-has-this", RawHash: rawHash(body1), Lease: time.Minute, TTL: time.Hour})
		if err != nil || c.Outcome != reference.Claimed {
			t.Fatalf("seed claim: %+v %v", c, err)
		}
		want := reference.Response{Status: http.StatusAccepted, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("seeded")}
		if err := s.Complete(ctx, sc, c.Token, want); err != nil {
			t.Fatal(err)
		}
		cancel()
		r := e.post("seeded", body1)
		if r.status != http.StatusAccepted || r.body != "seeded" || r.header.Get("Content-Type") != "text/plain" || !isReplay(r) {
			t.Fatalf("local=%v same bytes: got %d %q %v, want the seeded replay", local, r.status, r.body, r.header)
		}
		e.wantProblem(e.post("seeded", " "+body1), http.StatusUnprocessableEntity, 0)
		_ = s.Close()
	}
}
