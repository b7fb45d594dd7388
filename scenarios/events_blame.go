package scenarios

import (
	"fmt"
	"slices"

	"github.com/idemcheck/idemcheck/wire"
)

// extraEventOnly is the verdict of a case that counted n executions
// under a key whose answers rs show one (no second created id, every
// other answer a 4xx refusal), when the events are the only oracle: the
// extra count is an event published for a refused request, the outbox
// rule's (IK-OUTBOX-1, judged by outbox/none-for-mismatch and the other
// outbox cases), and no evidence that the refused request executed. nil
// when that is not the situation.
func (e *Env) extraEventOnly(n int, rs ...wire.Resp) *Verdict {
	if n <= 1 || e.oracle == nil || !e.oracle.ev.EventsOnly() || len(e.DistinctIDs(rs...)) > 1 {
		return nil
	}
	if slices.ContainsFunc(rs, func(r wire.Resp) bool { return !r.OK() && !r.Is4xx() }) {
		return nil
	}
	v := e.Inconclusive(fmt.Sprintf("the events, the only oracle, count %d executions while the answers show one (no second created id, the others refused): an event published for a refused request breaks the outbox rule (IK-OUTBOX-1, the outbox/ cases judge it), which is no evidence that the refused request executed", n))
	return &v
}
