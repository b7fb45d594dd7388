package scenarios

import (
	"strings"

	"github.com/idemcheck/idemcheck/wire"
)

// Advice says what would let r, a result without evidence (unverifiable
// or inconclusive), decide: the cause its reason names, never a generic
// "configure an oracle" when one is configured. "" when the reason says it
// already (a need the config lacks). Front ends print it with exit 5's
// list.
func Advice(r Result) string {
	why := r.Reason
	if strings.Contains(why, "configure an oracle or an id_pointer") {
		return ""
	}
	for _, a := range advice {
		for _, m := range a.match {
			if strings.Contains(why, m) {
				return a.say
			}
		}
	}
	if r.Status == Unverifiable {
		return "configure an oracle or an id_pointer to tell a replay from a re-execution (idemcheck list shows what each case lacks)"
	}
	return "see the reason; -v prints the case's exchanges"
}

// advice maps phrases of the cases' reasons to what to do, first match
// wins.
var advice = []struct {
	match []string
	say   string
}{
	{[]string{"oracle misconfigured", "oracle check on", "the configured oracles overlap"},
		"fix the oracle the run's note names (its url, pointer or principal), or give each operation its own (operations[].oracle)"},
	{[]string{"does not count"},
		"give that operation its own oracle (operations[].oracle), or an id_pointer"},
	{[]string{"a stall:", "past TTL", "after the TTL"},
		"a request was sent past TTL − margin: declare (and deploy) a longer TTL, or re-run on a less loaded machine"},
	{[]string{"past the lease:"},
		"a request ran past the declared lease (a stalled machine): re-run on a less loaded machine, or declare a longer lease"},
	{[]string{"could not overlap", "could not place", "no in-flight conflict", "not shown inside", "arrived only after", "not every one of"},
		"the overlap could not be created (a stall, or a slow variant too short to open it): re-run, or lengthen the slow variant"},
	{[]string{"did not succeed", "normal call failed", "normal call fails", "did not produce", "the invalid variant was", "cannot call this operation", "cannot be read"},
		"a request the case builds on failed (see the reason): fix what the config says of it (body, variant, principal, oracle)"},
	{[]string{"was not rejected (see", "was not rejected in the first place", "was not refused"},
		"a prerequisite case failed: see the case the reason names"},
	{[]string{wire.ErrStaleConn.Error(), "got an answer", "transport error"},
		"a connection was lost before an answer: re-run"},
	{[]string{"budget ran out", "cut short"},
		"the case ran out of time (a stalled target or machine): re-run"},
	{[]string{"equal bodies", "no id_pointer and no oracle", "cannot show"},
		"configure an oracle or an id_pointer to tell a replay from a re-execution (idemcheck list shows what each case lacks)"},
}
