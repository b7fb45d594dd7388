package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// TestConflictLeaks: security/conflict-no-leak finds in a conflict body
// what the stored request and response hold and the new request does not,
// and nothing a correct server may legitimately say.
func TestConflictLeaks(t *testing.T) {
	stored := []byte(`{"amount":1000,"currency":"usd","note":"birthday gift"}`)
	sent := []byte(`{"amount":1001,"currency":"usd","note":"birthday gift"}`)
	first := wire.Resp{Body: []byte(`{"id":"ch_4f9a2c81","object":"charge","created":"2026-12-06T21:00:00Z","key":"k-123456789"}`)}
	control := wire.Resp{Body: []byte(`{"id":"ch_77aa0b12","object":"charge","created":"2026-12-06T21:00:00Z"}`)}
	sum := sha256.Sum256(stored)
	lp := newLeakProbe(first, control, stored, sent, "http://api/v1/charges", "k-123456789")
	for _, tc := range []struct {
		rule  string
		body  string
		leaks int
	}{
		{"a plain problem document", `{"type":"about:blank","title":"Key reused","status":422}`, 0},
		{"the new request echoed", `{"detail":"amount 1001 does not match the key's request","note":"birthday gift"}`, 0},
		{"the key echoed", `{"detail":"key k-123456789 was used with another payload"}`, 0},
		{"its own timestamp, equal to the second", `{"timestamp":"2026-12-06T21:00:00Z"}`, 0},
		{"what every answer carries", `{"object":"charge"}`, 0},
		{"the stored resource's id", `{"detail":"see ch_4f9a2c81"}`, 1},
		{"a field diff with the stored amount", `{"diff":{"amount":[1000,1001]}}`, 1},
		{"the stored body's hash", `{"fingerprint":"` + hex.EncodeToString(sum[:]) + `"}`, 1},
		{"the hash, upper case", `{"fingerprint":"` + hex.EncodeToString(sum[:])[:20] + `"}`, 1},
	} {
		if got := lp.found([]byte(tc.body)); len(got) != tc.leaks {
			t.Errorf("rule: %s: found %q, want %d", tc.rule, got, tc.leaks)
		}
	}
}

// TestResentCredentials: replay/no-credentials counts a credential line
// the replay repeats from the original, not one every answer carries, not
// a fresh value, and not a field replay_metadata asks to be repeated.
func TestResentCredentials(t *testing.T) {
	e := &Env{Profile: &apispec.Profile{}}
	first := wire.Resp{Header: http.Header{"Set-Cookie": {"sess=abc; Path=/", "lb=s1; Path=/"}, "Www-Authenticate": {`Bearer realm="x"`}}}
	control := wire.Resp{Header: http.Header{"Set-Cookie": {"sess=zzz; Path=/", "lb=s1; Path=/"}}}
	for _, tc := range []struct {
		rule   string
		replay http.Header
		meta   []string
		resent int
	}{
		{"nothing repeated", http.Header{}, nil, 0},
		{"the constant cookie only", http.Header{"Set-Cookie": {"lb=s1; Path=/"}}, nil, 0},
		{"a fresh session value", http.Header{"Set-Cookie": {"sess=new; Path=/"}}, nil, 0},
		{"the session repeated, attributes rewritten", http.Header{"Set-Cookie": {"sess=abc; Path=/x"}}, nil, 1},
		{"the session folded with another", http.Header{"Set-Cookie": {"lb=s1, sess=abc"}}, nil, 1},
		{"the challenge repeated", http.Header{"Www-Authenticate": {`Bearer realm="x"`}}, nil, 1},
		{"the challenge repeated as replay_metadata asks", http.Header{"Www-Authenticate": {`Bearer realm="x"`}}, []string{"www-authenticate"}, 0},
	} {
		e.Profile.ReplayMetadata = tc.meta
		if _, got := e.resentCredentials(first, wire.Resp{Header: tc.replay}, control); len(got) != tc.resent {
			t.Errorf("rule: %s: resent %q, want %d", tc.rule, got, tc.resent)
		}
	}
}
