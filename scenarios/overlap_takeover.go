package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// takenOver judges an in-flight-offsets attempt whose slow original did
// not succeed: a service that checks, as it completes, that it still
// holds the key refuses the original once a duplicate took the key over
// (a lease that lapsed mid-run), so the lapse shows as a failed original
// beside a duplicate that succeeded. That is this case's failure when the
// downstream double received two calls of the key before the original
// answered: two executions at once, timed at the server's side (a
// duplicate's send time alone could be a stall's). ok is false when
// nothing proves it (no double, or one call), the attempt then
// inconclusive as before. A server that may hold duplicates (block_ok)
// can run one legitimately after the original failed: not judged here.
func (e *Env) takenOver(k string, slow wire.Resp, dups []wire.Resp, d time.Duration) (v Verdict, ok bool) {
	if e.Profile.BlockOK || slow.Err != nil {
		return Verdict{}, false
	}
	route := ""
	if _, sv, _ := e.Variant(apispec.VariantSlow); sv.Downstream != nil {
		route = sv.Downstream.Route
	} else if o := e.Target.OracleOf(e.Op); o != nil {
		route = o.Downstream
	}
	var at []string
	for _, c := range e.double.Journal(k) {
		if route != "" && c.Route == route && c.Time.Before(slow.End) {
			at = append(at, "+"+c.Time.Sub(slow.Start).Round(time.Millisecond).String())
		}
	}
	var won []string
	for i, r := range dups {
		if r.OK() && r.SentAt().Before(slow.End) {
			won = append(won, fmt.Sprintf("the duplicate at the %s (+%s): %s", inFlightOffsets[i].name, r.SentAt().Sub(slow.Start).Round(time.Millisecond), r.String()))
		}
	}
	if route == "" || len(at) < 2 || len(won) == 0 {
		return Verdict{}, false
	}
	return e.Fail(fmt.Sprintf("%v while in flight, at every offset; never a second execution", e.Profile.InFlightStatus),
		fmt.Sprintf("a second execution while the original ran: downstream %s received %d calls of the key before the original answered (at %s); %s; the slow original (%s) then answered %s",
			route, len(at), strings.Join(at, ", "), strings.Join(won, "; "), d, slow.String())), true
}
