package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/wire"
)

// OUTBOX, what the events say: a decline that changed nothing announces
// nothing (unless the API documents announcing it, events.declines), and
// each event names the resource its execution created (events.resource_id)
// — after expiry the new one, not the key's first.
func init() {
	register(
		// Not UsesOracle: an oracle counts the decline as an execution,
		// which publishes nothing; events.declines decides.
		Case{Meta: Meta{ID: "outbox/none-for-declined", Family: "outbox", Requirements: []string{"IK-OUTBOX-1"}, Level: Must,
			Requirement: outboxRequirement + "A declined request (a business error) changed nothing and publishes no event, unless the API announces declines (events.declines: announced): then exactly one.",
			Explanation: "The business_error variant under a fresh key is answered with its declared status: no event for its key (one under events.declines: announced), judged once a normal request sent after it (the control) has its event: the relay published past the decline.",
			Needs:       []Need{NeedEvents, NeedBusinessError}},
			PerOperation: true, Run: outboxNoneForDeclined},
		Case{Meta: Meta{ID: "outbox/announces-created-id", Family: "outbox", Requirements: []string{"IK-OUTBOX-2"}, Level: Must,
			Requirement: "seeds: the event an execution publishes announces what it did; its resource id (events.resource_id) is the id the answer carries (id_pointer).",
			Explanation: "One request under a fresh key: its one event names the created id of the answer.",
			Needs:       []Need{NeedEvents}},
			PerOperation: true, UsesOracle: true, Skips: needsResourceID, Run: outboxAnnouncesCreatedID},
		Case{Meta: Meta{ID: "outbox/fresh-id-after-expiry", Family: "outbox", Requirements: []string{"IK-OUTBOX-2", "IK-EXPIRY-2"}, Level: Must,
			Requirement: "seeds: a key reused after it expired is a new request; its execution creates a new resource and its event announces that new id, not the first execution's.",
			Explanation: "The original, then the same key after TTL + grace executes afresh: two events, the first naming the original's id, the second the retry's.",
			Needs:       []Need{NeedEvents, NeedTTL}},
			Proof:        ByFresh,
			PerOperation: true, UsesOracle: true, Skips: skipFreshIDAfterExpiry,
			Unfit: notForFirstSent("a key past its retention is refused by its first_sent, never fresh: nothing re-executes to announce a new id"), Run: outboxFreshIDAfterExpiry},
	)
}

// needsResourceID: the cases holding events' resource ids against the
// answers need both pointers.
func needsResourceID(t *apispec.Target, _ *apispec.Profile, op *apispec.Operation) string {
	switch {
	case t.Events == nil:
		return ""
	case t.Events.ResourceID == "":
		return "events.resource_id is not set: no pointer to the resource id an event announces"
	case op.IDPointer == "":
		return "the operation declares no id_pointer: no created id to hold an event's against"
	}
	return ""
}

func skipFreshIDAfterExpiry(t *apispec.Target, p *apispec.Profile, op *apispec.Operation) string {
	if why := needsResourceID(t, p, op); why != "" {
		return why
	}
	if p.Expiry == apispec.ExpiryExpired409 {
		return "profile expiry expired-409: a key reused after expiry is refused, nothing executes afresh"
	}
	return expiryWaitTooLong(t, p, op)
}

func outboxNoneForDeclined(ctx context.Context, e *Env) Verdict {
	body, v, _ := e.Variant(apispec.VariantBusinessError)
	k := e.NewKey()
	r := e.Send(ctx, Req{Label: "business_error variant (a decline)", Key: k, Body: body})
	if x := e.lostConn(r); x != nil {
		return *x
	}
	if r.Err != nil || r.OK() || (v.Status != 0 && !r.HasStatus(v.Status)) {
		return e.Inconclusive("the business_error variant was not answered with its declared status: " + r.String())
	}
	w := e.wantOf(k, "the declined key", r)
	w.byAnswers = true
	if e.events.Config().Declines == eventspec.DeclinesAnnounced {
		w.answered, w.how = 1, "events.declines: announced; "+w.how
	}
	// An absence is only seen once the relay has published past it: a
	// normal request after the decline is the control, and the decline's
	// count is judged once the control's event came (a relay stalled for
	// longer than the settle time would otherwise show no event yet).
	ck := e.NewKey()
	c := e.Send(ctx, Req{Label: "control: a normal request after the decline (its event shows the relay published past it)", Key: ck})
	if x := e.lostConn(c); x != nil {
		return *x
	}
	if !c.OK() {
		return e.Inconclusive("the control request after the decline did not succeed: " + c.String())
	}
	return e.judgeOutbox(ctx, w, e.wantOf(ck, "the control key", c))
}

func outboxAnnouncesCreatedID(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	r := e.Send(ctx, Req{Label: "one request", Key: k})
	if !r.OK() {
		return e.Inconclusive("the normal call did not succeed: " + r.String())
	}
	return e.judgeAnnounced(ctx, e.wantOf(k, "the key", r), r)
}

func outboxFreshIDAfterExpiry(ctx context.Context, e *Env) Verdict {
	if v := e.tooLongToWait(); v != nil {
		return *v
	}
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	if err := clock.Until(ctx, first.End.Add(e.Target.TTL+e.Profile.Grace)); err != nil {
		return e.Inconclusive(err.Error())
	}
	retry := e.Send(ctx, Req{Label: fmt.Sprintf("retry at TTL + %s (a new request)", e.Profile.Grace), Key: k})
	if !retry.OK() || e.CreatedID(retry) == e.CreatedID(first) {
		return e.Inconclusive("the retry after the TTL did not execute afresh (expiry/fresh-after-ttl judges that): " + retry.String())
	}
	return e.judgeAnnounced(ctx, e.wantOf(k, "the key", first, retry), first, retry)
}

// judgeAnnounced is judgeOutbox for w, then each of the key's events must
// name (events.resource_id) one of the created ids rs carry, and each of
// those ids must be named by one.
func (e *Env) judgeAnnounced(ctx context.Context, w outboxWant, rs ...wire.Resp) Verdict {
	v, ts := e.judgeOutboxTallies(ctx, w)
	if v.Status != Pass {
		return v
	}
	ids := e.DistinctIDs(rs...)
	var named, wrong []string
	for _, ev := range ts[0].Events {
		switch {
		case ev.Redelivery:
		case slices.Contains(ids, ev.Resource):
			named = append(named, ev.Resource)
		default:
			wrong = append(wrong, fmt.Sprintf("%s names %q", ev.Position, ev.Resource))
		}
	}
	observed := fmt.Sprintf("answers created %s; events at %s: %s", strings.Join(ids, ", "), e.events.Config().ResourceID, v.Observed)
	if len(wrong) > 0 {
		return e.Fail("each event names the resource its execution created ("+strings.Join(ids, ", ")+")", strings.Join(wrong, "; ")+"; "+observed)
	}
	for _, id := range ids {
		if !slices.Contains(named, id) {
			return e.Fail("an event naming each created resource", fmt.Sprintf("no event names %s (a stale id announced instead?); %s", id, observed))
		}
	}
	return e.Pass(observed)
}
