package drive

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
)

// EventsReport is what the events source (events:) showed over the whole
// history: every key's events once settled, held against what the key
// executed.
type EventsReport struct {
	// Where names the stream and how keys are read (no secret in it).
	Where string `json:"where"`
	// Keys judged, and the events (each id once) they published.
	Keys   int `json:"keys"`
	Events int `json:"events"`
	// Lost and Duplicated count the keys breaking the rule (their lines
	// are violations of the report, rules event-lost and
	// event-duplicated).
	Lost       int `json:"lost"`
	Duplicated int `json:"duplicated"`
	// Redeliveries counts the events that re-sent an earlier event's id
	// (at-least-once delivery: the same execution again, not counted as
	// another, so apart from Duplicated), on RedeliveredKeys keys.
	Redeliveries    int `json:"redeliveries"`
	RedeliveredKeys int `json:"redelivered_keys"`
	// Unsettled keys' counts still changed at the settle bound: not
	// judged. Error, when set, is why nothing was judged.
	Unsettled int    `json:"unsettled,omitempty"`
	Error     string `json:"error,omitempty"`
}

// eventsSettleTimeout bounds the final read of the events beyond the
// settle bound itself.
const eventsSettleTimeout = time.Minute

// checkEvents holds each key of the history to its published events: a
// key that committed (created ids seen upstream, or a 2xx final answer)
// publishes one event per created id, at least one; any other key at most
// one (it may or may not have executed). since is when the last answer
// came (the relay may publish up to events.settle later).
func checkEvents(ctx context.Context, es *evidence.Events, outs []chaos.KeyOutcome, since time.Time) (EventsReport, []chaos.KeyViolation) {
	cfg := es.Config()
	where := cfg.String()
	rep := EventsReport{Where: where}
	keys := make([]string, len(outs))
	for i, o := range outs {
		keys[i] = o.Key
	}
	if len(keys) == 0 {
		return rep, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventspec.SettleFactor*cfg.Settle+eventsSettleTimeout)
	defer cancel()
	floors := make([]int, len(outs))
	for i, o := range outs {
		floors[i] = committedOf(o)
	}
	// A committed key short of its event is waited for up to the settle
	// bound: a relay lags under load.
	ts, err := es.SettleAtLeast(ctx, since, floors, keys...)
	if ts == nil && err != nil {
		rep.Error = err.Error()
		return rep, nil
	}
	var vs []chaos.KeyViolation
	for i, o := range outs {
		t := ts[i]
		if !t.Settled {
			rep.Unsettled++
			continue
		}
		rep.Keys++
		rep.Events += t.Executions
		if t.Redeliveries > 0 {
			rep.Redeliveries += t.Redeliveries
			rep.RedeliveredKeys++
		}
		committed := floors[i]
		v := chaos.KeyViolation{Key: o.Key, IDs: o.IDs}
		if o.Op != nil {
			v.Kind = o.Op.Kind
		}
		list := evidence.EventList(t.Events, time.Time{})
		switch {
		case committed > 0 && t.Executions < committed:
			rep.Lost++
			v.Rule = chaos.RuleEventLost
			v.Detail = fmt.Sprintf("executed (%s) and published %s: %s", count(committed, "created id"), count(t.Executions, "event"), list)
		case t.Executions > max(committed, 1):
			rep.Duplicated++
			v.Rule = chaos.RuleEventDuplicated
			v.Detail = fmt.Sprintf("%s for %s: %s", count(t.Executions, "event"), count(max(committed, 1), "execution"), list)
		default:
			continue
		}
		vs = append(vs, v)
	}
	if rep.Events == 0 && rep.Lost > 0 {
		// Not one event for any key: the stream or the key is wrong, not
		// every execution of the API (run's start check says the same).
		st, err := es.Stats(ctx)
		rep.Error = fmt.Sprintf("none of the %d keys that executed has an event on %s", rep.Lost, where)
		switch {
		case err != nil:
			rep.Error += ": " + err.Error()
		case st.Read == 0:
			rep.Error += ": no event at all reached it during the run (a wrong topic or stream)"
		default:
			rep.Error += fmt.Sprintf(": %d events read, %d of them attributed to no key (%s): check events.key", st.Read, st.Unattributed, st.WhyUnattributed)
		}
		rep.Keys, rep.Lost = 0, 0
		return rep, nil
	}
	return rep, vs
}

// committedOf is how many executions a key's history proves: its
// distinct created ids, at least one for a 2xx final answer.
func committedOf(o chaos.KeyOutcome) int {
	if len(o.IDs) == 0 && o.Op != nil && o.Op.Outcome == chaos.ClientOK && o.Op.Status/100 == 2 {
		return 1
	}
	return len(o.IDs)
}

// count is "1 event", "2 events".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
