package reference_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/reference"
)

// TestRequestIdentity: the query and the named header fields are part of
// what a key stands for, as the body is.
func TestRequestIdentity(t *testing.T) {
	post := func(e *env, path, key string, headers ...string) result {
		e.t.Helper()
		return e.send("POST", path, body1, append([]string{"Authorization: Bearer alice", "Idempotency-Key: " + key}, headers...)...)
	}
	t.Run("query", func(t *testing.T) {
		e := newEnv(t, nil)
		a := post(e, "/things?capture=true&currency=usd", `"q1"`)
		b := post(e, "/things?currency=usd&capture=true", `"q1"`) // the same query, reordered
		c := post(e, "/things?capture=false&currency=usd", `"q1"`)
		d := post(e, "/things", `"q1"`)
		if a.status != 201 || !isReplay(b) || b.body != a.body {
			t.Fatalf("reordered query: first %d, retry %d replay=%v", a.status, b.status, isReplay(b))
		}
		e.wantProblem(c, 422, 1)
		e.wantProblem(d, 422, 1)
		// A body-only request keeps the body-only record format.
		post(e, "/things", `"q2"`)
		if r := post(e, "/things?", `"q2"`); !isReplay(r) {
			t.Fatalf("an empty query is no query: %d", r.status)
		}
	})
	t.Run("headers", func(t *testing.T) {
		e := newEnv(t, nil, reference.WithFingerprintHeaders("api-version"))
		a := post(e, "/things", `"h1"`, "Api-Version: 2024-01-01")
		if r := post(e, "/things", `"h1"`, "Api-Version:  2024-01-01 ", "X-Trace: other"); !isReplay(r) || r.body != a.body {
			t.Fatalf("same version (other whitespace), unnamed field changed: %d replay=%v", r.status, isReplay(r))
		}
		e.wantProblem(post(e, "/things", `"h1"`, "Api-Version: 2024-06-01"), 422, 1)
		e.wantProblem(post(e, "/things", `"h1"`), 422, 1) // absent is another request too
	})
	t.Run("no-query-fingerprint", func(t *testing.T) {
		e := newEnv(t, nil, reference.WithDefects(reference.NoQueryFingerprint), reference.WithFingerprintHeaders("Api-Version"))
		a := post(e, "/things?capture=true", `"d1"`)
		if r := post(e, "/things?capture=false", `"d1"`); !isReplay(r) || r.body != a.body {
			t.Fatalf("the defect should replay another query's response: %d replay=%v", r.status, isReplay(r))
		}
		// Headers stay in: the defect leaves out the query only.
		e.wantProblem(post(e, "/things?capture=true", `"d1"`, "Api-Version: 2"), 422, 1)
	})
	t.Run("no-fingerprint", func(t *testing.T) {
		e := newEnv(t, nil, reference.WithDefects(reference.NoFingerprint), reference.WithFingerprintHeaders("Api-Version"))
		post(e, "/things?capture=true", `"n1"`)
		if r := post(e, "/things?capture=false", `"n1"`, "Api-Version: 2"); !isReplay(r) {
			t.Fatalf("no-fingerprint compares nothing: %d", r.status)
		}
	})
}
