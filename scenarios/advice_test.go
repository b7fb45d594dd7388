package scenarios

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/wire"
)

// TestAdvice: exit 5's advice names the cause each result's reason gives,
// not "configure an oracle" when the cause is a failed prerequisite, a
// TTL too short or a stall (it said "configure an oracle" for all).
func TestAdvice(t *testing.T) {
	for _, tc := range []struct {
		status      Status
		reason      string
		want, avoid string
	}{
		{Unverifiable, "no oracle", "configure an oracle", ""},
		{Inconclusive, "the slow variant did not succeed: 500 boom", "a request the case builds on failed", "configure an oracle"},
		{Inconclusive, "the invalid variant was not rejected with a 4xx: 201", "a request the case builds on failed", "configure an oracle"},
		{Inconclusive, "the invalid variant was rejected with 400, not the 422 variants.invalid.status names: 400", "a request the case builds on failed", "configure an oracle"},
		{Inconclusive, "a stall: the retry was sent 2.7s after the original started, past TTL 2s − margin 500ms", "longer TTL", "configure an oracle"},
		{Inconclusive, "past the lease: a request sent while the original ran was answered 9s after", "longer lease", "configure an oracle"},
		{Inconclusive, "oracle misconfigured: a 201 answer to POST /v1/refunds under a fresh key left the count unchanged", "fix the oracle", ""},
		{Inconclusive, "could not place the duplicate at its offset of the original's run at: last quarter", "lengthen the slow variant", "configure an oracle"},
		{Inconclusive, wire.ErrStaleConn.Error(), "re-run", "configure an oracle"},
		{Inconclusive, "something new", "-v prints", "configure an oracle"},
		{Unverifiable, "needs effects: configure an oracle or an id_pointer to tell a replay from a re-execution", "", ""},
	} {
		got := Advice(Result{Status: tc.status, Reason: tc.reason})
		if tc.want == "" && got != "" {
			t.Errorf("%s %q: advice %q, want none: the reason says it", tc.status, tc.reason, got)
			continue
		}
		if !strings.Contains(got, tc.want) || (tc.avoid != "" && strings.Contains(got, tc.avoid)) {
			t.Errorf("%s %q: advice %q, want it to say %q", tc.status, tc.reason, got, tc.want)
		}
	}
}
