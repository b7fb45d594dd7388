package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
	"github.com/idemcheck/idemcheck/evidence/events"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/wire"
)

// The outbox rule (IK-OUTBOX-1): an API that publishes an event per
// execution publishes exactly one per executed key, committed with the
// key's outcome — none for a replay, none for a request that did not
// execute, not two across a retry. The events come from the events:
// source (evidence.Events); the executions they are held against from the
// oracle when one is configured beside it, else from the answers.

// outboxWant is what one key's events are judged against.
type outboxWant struct {
	key string
	// name says which of the case's keys it is ("the key", "the burst's key").
	name string
	// answered is the executions the key's answers show: 1 for a key that
	// got a 2xx (an original, its replays or a retry), 0 for one whose
	// every answer says nothing executed (a 400 for an invalid body).
	answered int
	// how says which answers show it.
	how string
	// first is when the key's first request was sent (event times are
	// shown from it); last when its last answer came (events are waited
	// for from it).
	first, last time.Time
	// byAnswers: answered decides even beside an oracle. The key had an
	// execution that failed and was not stored, which an oracle counts (a
	// provider call, an order row, an effect) and which publishes nothing.
	byAnswers bool
}

// wantOf is the outbox expectation of key from rs, its requests' answers:
// as many executions as distinct created ids among them, at least one when
// one of them succeeded, else none.
func (e *Env) wantOf(key, name string, rs ...wire.Resp) outboxWant {
	w := outboxWant{key: key, name: name}
	var statuses []string
	for _, r := range rs {
		if w.first.IsZero() || (!r.Start.IsZero() && r.Start.Before(w.first)) {
			w.first = r.Start
		}
		if r.End.After(w.last) {
			w.last = r.End
		}
		if r.OK() {
			w.answered = 1
		}
		statuses = append(statuses, r.String())
	}
	if ids := e.DistinctIDs(rs...); len(ids) > 1 {
		w.answered = len(ids) // the API executed again: one event each
	}
	w.how = fmt.Sprintf("%d answers: %s", len(rs), strings.Join(statuses, ", "))
	if len(rs) == 1 {
		w.how = "its answer: " + statuses[0]
	}
	return w
}

// judgeOutbox settles the events of each key and holds their count (each
// event id once) against the executions the oracle counts for the key
// when an oracle is configured beside the events (unless byAnswers),
// else against what its answers show. A count that does not settle, or an oracle that cannot
// count, is inconclusive. Every key's events are listed for the verdict.
func (e *Env) judgeOutbox(ctx context.Context, ws ...outboxWant) Verdict {
	v, _ := e.judgeOutboxTallies(ctx, ws...)
	return v
}

// judgeOutboxTallies is judgeOutbox with the keys' tallies (nil when the
// events did not settle).
func (e *Env) judgeOutboxTallies(ctx context.Context, ws ...outboxWant) (Verdict, []events.Tally) {
	if e.events == nil {
		return e.Skip("needs " + string(NeedEvents) + ": the broker the API publishes its events to"), nil
	}
	since := time.Time{}
	keys := make([]string, len(ws))
	wants := make([]int, len(ws))
	hows := make([]string, len(ws))
	for i, w := range ws {
		keys[i] = w.key
		if w.last.After(since) {
			since = w.last
		}
		wants[i], hows[i] = w.answered, w.how
		if e.oracle != nil && !e.oracle.ev.EventsOnly() && !w.byAnswers {
			n, err := e.Executions(ctx, w.key)
			if err != nil {
				return e.Inconclusive(err.Error()), nil
			}
			wants[i], hows[i] = n, "the oracle counts "+plural(n, "execution")
		}
	}
	// A key short of its executions' events is waited for up to the
	// settle bound: a relay lags under load.
	ts, err := e.events.SettleAtLeast(ctx, since, wants, keys...)
	for i, t := range ts {
		e.noteEvents(e.events.Lines(t, ws[i].name+" "+evidence.ShortKey(t.Key), ws[i].first))
	}
	if err != nil {
		return e.Inconclusive(err.Error()), nil
	}
	var seen []string
	for i, w := range ws {
		want, how, t := wants[i], hows[i], ts[i]
		got := fmt.Sprintf("%s: %s (%s)", w.name, plural(t.Executions, "event"), evidence.EventList(t.Events, w.first))
		if t.Redeliveries > 0 {
			got = fmt.Sprintf("%s: %s, %d of them redeliveries of an id (%s)", w.name, plural(len(t.Events), "event"), t.Redeliveries, evidence.EventList(t.Events, w.first))
		}
		if t.Executions != want {
			return e.Fail(fmt.Sprintf("exactly one event per execution: %s for %s (%s)", plural(want, "event"), w.name, how), got+e.outboxWhy(t.Executions, want, w.byAnswers)), ts
		}
		seen = append(seen, fmt.Sprintf("%s: %s for %s (%s)", w.name, plural(t.Executions, "event"), plural(want, "execution"), how))
	}
	return e.Pass(strings.Join(seen, "; ")), ts
}

// outboxWhy names the likely cause of a wrong count; failed: the key had
// an execution that failed and was not stored (byAnswers).
func (e *Env) outboxWhy(got, want int, failed bool) string {
	switch {
	case got > want && e.events.Config().EventID == "":
		return "; events without an id (events.event_id) cannot tell a redelivery from a second publication"
	case got > want && failed:
		return "; an event for the execution that failed: published before its outcome was stored (outside the outcome's transaction), so the failure did not take it back"
	case got > want:
		return "; a second event (not a redelivery of the first one's id): published outside the outcome's transaction, on a replay, or again by a relay"
	}
	c := e.events.Config()
	return fmt.Sprintf("; an executed key without its event within %s of its answer (%d × events.settle): the event was lost (published outside the outcome's transaction), or the relay lags more than that", eventspec.SettleFactor*c.Settle, eventspec.SettleFactor)
}

// noteEvents keeps lines for the verdict.
func (e *Env) noteEvents(lines []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.eventLines = append(e.eventLines, lines...)
}

// eventEvidence is what noteEvents kept.
func (e *Env) eventEvidence() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.eventLines...)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// calibrateEvents sends op's normal request under a fresh key and says
// what was seen when its events are not exactly one for that key (""
// when they are): no event at all (a wrong topic or stream), events for
// other keys or none (a wrong events.key), several (overlapping streams,
// or an API that publishes more than one event per execution).
//
// several is set instead when the API published more than one event under
// distinct ids (events.event_id): no overlapping streams (those repeat an
// id) but an API breaking the outbox rule, which the outbox cases judge
// (a fail, IK-OUTBOX-1) rather than leave inconclusive; the events then
// over-count executions for every other case.
func calibrateEvents(ctx context.Context, s *session, op *apispec.Operation) (problem, several string) {
	problem = calibrateEventsOnce(ctx, s, op)
	if strings.HasPrefix(problem, severalPrefix) {
		return "", strings.TrimPrefix(problem, severalPrefix)
	}
	return problem, ""
}

// severalPrefix marks calibrateEventsOnce's finding of several events
// under distinct ids.
const severalPrefix = "several: "

func calibrateEventsOnce(ctx context.Context, s *session, op *apispec.Operation) string {
	es := s.ev.Events()
	cfg := es.Config()
	ctx, cancel := context.WithTimeout(ctx, 2*s.t.Timeout+(eventspec.SettleFactor+1)*cfg.Settle)
	defer cancel()
	e := s.env(ctx, op)
	k := e.NewKey()
	if err := e.keyError(); err != nil {
		return fmt.Sprintf("events check on %s: %v", op.Name, err)
	}
	r := e.Send(ctx, Req{Label: "events check", Key: k})
	if !r.OK() {
		return fmt.Sprintf("events check on %s: the normal call answered %s, so the events could not be checked", op.Name, r.String())
	}
	ts, err := es.SettleAtLeast(ctx, r.End, []int{1}, k)
	if err != nil {
		return fmt.Sprintf("events check on %s: %v", op.Name, err)
	}
	switch t := ts[0]; {
	case t.Executions == 1:
		return ""
	case t.Executions > 1 && cfg.EventID != "":
		return fmt.Sprintf("%sevents check on %s: one request under a fresh key published %d events for it under distinct ids (%s) within events.settle %s: the API publishes more than one event per execution (a relay that republishes under a new id?); the outbox cases judge it",
			severalPrefix, op.Name, t.Executions, evidence.EventList(t.Events, r.Start), cfg.Settle)
	case t.Executions > 1:
		return fmt.Sprintf("events check on %s: one request under a fresh key published %d events for it (%s) within events.settle %s: two streams overlap, or the API publishes several events per execution (events.event_id tells them apart)",
			op.Name, t.Executions, evidence.EventList(t.Events, r.Start), cfg.Settle)
	}
	st, err := es.Stats(ctx)
	if err != nil {
		return fmt.Sprintf("events check on %s: %v", op.Name, err)
	}
	seen := fmt.Sprintf("a %d answer to %s %s under a fresh key published no event for it within %s (%d × events.settle): ", r.Status, op.Method, op.Path, eventspec.SettleFactor*cfg.Settle, eventspec.SettleFactor)
	switch {
	case st.Read == 0:
		seen += fmt.Sprintf("no event at all reached %s since the run started (a wrong topic or stream, or the API publishes nowhere yet)", cfg.String())
	case st.Unattributed > 0:
		seen += fmt.Sprintf("%d events read since the run started, %d of them attributed to no key (the first: %s): check events.key", st.Read, st.Unattributed, st.WhyUnattributed)
	case op.Marker != nil:
		seen += fmt.Sprintf("%d events read since the run started, each attributed to another key: events.key reads neither the idempotency key the request carried nor the marker token at its %s", st.Read, op.Marker)
	default:
		seen += fmt.Sprintf("%d events read since the run started, each attributed to another key: events.key does not read the idempotency key the request carried (or set marker: on the operation, if the API copies a member of the request into its event)", st.Read)
	}
	return fmt.Sprintf("events check on %s: %s", op.Name, seen)
}

// calibrateOutbox checks the events once per operation an outbox case
// runs on, when the events sit beside an oracle (as the oracle they are
// checked by calibrate): a problem makes that operation's outbox cases
// inconclusive, and is a note.
func calibrateOutbox(ctx context.Context, s *session, ins []instance) (problems map[string]string, notes []string) {
	problems = map[string]string{}
	if s.ev.Events() == nil || s.ev.EventsOnly() {
		return problems, nil
	}
	used := map[string]bool{}
	for _, in := range ins {
		if in.Runnable() && in.op != nil && slices.Contains(in.c.Needs, NeedEvents) {
			used[in.op.Name] = true
		}
	}
	for i := range s.t.Operations {
		op := &s.t.Operations[i]
		if !used[op.Name] {
			continue
		}
		f, several := calibrateEvents(ctx, s, op)
		if f != "" {
			problems[op.Name] = f + "; the outbox cases are inconclusive"
			notes = append(notes, problems[op.Name])
		}
		if several != "" {
			notes = append(notes, several)
		}
	}
	return problems, notes
}

// optIn reports a requirement the run was not asked to test: its
// instances need the events: section the config does not have, or an
// AEP-155 key the target does not have. The outbox rule is about the
// events an API publishes, which the draft does not speak of; AEP-155's
// first_sent exists only in its key message: a run without them reaches
// its level without them (and --require-must does not ask for them); a
// run with them is held to them.
func (st requirementState) optIn() bool {
	return st.State == reqNotTested && optInMissing(st.By.Missing)
}

// OptInRequirements are the IDs of level l's requirements that are
// opt-in and not asked for by the run's config (Requirements counts them
// as OptIn).
func (r *Report) OptInRequirements(l Level) []string {
	var out []string
	for _, st := range r.requirementStates() {
		if st.Level == l && st.optIn() {
			out = append(out, st.ID)
		}
	}
	return out
}

// optInMissing reports needs that make a requirement opt-in: the events:
// section or an AEP-155 key.
func optInMissing(missing []Need) bool {
	return slices.Contains(missing, NeedEvents) || slices.Contains(missing, NeedFirstSent)
}
