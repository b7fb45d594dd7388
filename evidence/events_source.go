package evidence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence/events"
	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/wire"
)

// Events is the events source (events: in the config): the events the
// API publishes to its broker, attributed to keys by evidence/events. As
// a Source a key's executions are its events, each event id once, counted
// once the count has settled (Count). It is the run's oracle when no
// oracle is configured; beside one, the outbox cases compare the two
// (Evidence.Events).
type Events struct {
	r *events.Reader
}

// OpenEvents opens t's events source at the stream's current end: only
// what the API publishes from now on is read. An event names its key by
// the key itself or by the marker token d writes into the key's requests
// (an operation's marker:; d nil: none). It is nil (and no error) when t
// has no events: section. The error is one line naming the field.
func OpenEvents(ctx context.Context, t *apispec.Target, d *Downstream) (*Events, error) {
	if t.Events == nil {
		return nil, nil
	}
	r, err := events.Open(ctx, *t.Events, events.WithMarker(d.Token))
	if err != nil {
		return nil, errors.New(t.Redact(err.Error()))
	}
	return &Events{r: r}, nil
}

// PerKey: events name their key (a header or a payload member).
func (s *Events) PerKey() bool { return true }

// Sees: the broker holds what every replica published, whatever the API
// answered and whether or not the answer arrived.
func (s *Events) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

// Count is key's executions once its events have settled (Settle from
// now). A count still changing after the settle bound is an error: the
// engine makes the case inconclusive, never failed, on it.
func (s *Events) Count(ctx context.Context, key string, _ func(wire.Exchange)) (int, error) {
	if key == "" {
		return 0, errors.New("events: requests sent without a key have no key to attribute their events to")
	}
	ts, err := s.Settle(ctx, time.Time{}, key)
	if err != nil {
		return 0, err
	}
	return ts[0].Executions, nil
}

// Total: events are counted per key only.
func (s *Events) Total(context.Context, func(wire.Exchange)) (int, bool, error) {
	return 0, false, nil
}

// Settle reads the tallies of keys once none has changed for the settle
// time since since (zero: now), and turns a tally that never settled
// into an error naming the key and its events.
func (s *Events) Settle(ctx context.Context, since time.Time, keys ...string) ([]events.Tally, error) {
	ts, err := s.r.Settle(ctx, since, keys...)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if !t.Settled {
			return ts, fmt.Errorf("events: the count of key %s still changed within the last %s after %s of re-reading (%s): no count to judge by",
				ShortKey(t.Key), s.r.Config().Settle, eventspec.SettleFactor*s.r.Config().Settle, EventList(t.Events, time.Time{}))
		}
	}
	return ts, nil
}

// SettleAtLeast is Settle for keys whose executions are known to be at
// least floors[i] (an answer proved them): a relay that publishes late
// under load is waited for up to the settle bound (eventspec.SettleFactor
// settle times from since) before a count below its floor is returned as
// final. A count at or above its floor is returned once settled.
func (s *Events) SettleAtLeast(ctx context.Context, since time.Time, floors []int, keys ...string) ([]events.Tally, error) {
	if since.IsZero() {
		since = time.Now()
	}
	bound := since.Add(eventspec.SettleFactor * s.r.Config().Settle)
	ts, err := s.Settle(ctx, since, keys...)
	for err == nil && time.Now().Before(bound) && below(ts, floors) {
		ts, err = s.Settle(ctx, time.Now(), keys...)
	}
	return ts, err
}

func below(ts []events.Tally, floors []int) bool {
	for i, t := range ts {
		if i < len(floors) && t.Executions < floors[i] {
			return true
		}
	}
	return false
}

// Stats describes every event read since the source opened.
func (s *Events) Stats(ctx context.Context) (events.Stats, error) { return s.r.Stats(ctx) }

// Config is the events: section, defaults filled in.
func (s *Events) Config() eventspec.Config { return s.r.Config() }

// Close releases the broker connection; nil-safe.
func (s *Events) Close() error {
	if s == nil {
		return nil
	}
	return s.r.Close()
}

// Lines describes a key's events for a verdict, one line: "events kafka
// topic orders: 2 for key …3f2a: partition 0 offset 15 at +3 ms id
// evt_1, partition 1 offset 2 at +1,212 ms id evt_1 (a redelivery)",
// timed from first (the key's first request). No line without events.
func (s *Events) Lines(t events.Tally, name string, first time.Time) []string {
	if len(t.Events) == 0 {
		return nil
	}
	noun := "events"
	if len(t.Events) == 1 {
		noun = "event"
	}
	return []string{fmt.Sprintf("events %s: %d %s for %s: %s", s.where(), len(t.Events), noun, name, EventList(t.Events, first))}
}

// where names the stream without the key part of Config.String.
func (s *Events) where() string {
	c := s.r.Config()
	w, _, _ := strings.Cut(c.String(), ", key ")
	return w
}

// maxEventsShown bounds the events one line lists.
const maxEventsShown = 8

// EventList lists events: position, time (from first, else the clock
// time) and id, a redelivery marked.
func EventList(evs []events.Event, first time.Time) string {
	if len(evs) == 0 {
		return "no event"
	}
	out := make([]string, 0, min(len(evs), maxEventsShown+1))
	for i, e := range evs {
		if i == maxEventsShown {
			out = append(out, fmt.Sprintf("%d more", len(evs)-i))
			break
		}
		at := e.Time.UTC().Format("15:04:05.000")
		if !first.IsZero() {
			at = fmt.Sprintf("+%s ms", thousands(e.Time.Sub(first).Milliseconds()))
		}
		x := e.Position + " at " + at
		if e.ID != "" {
			x += " id " + e.ID
		}
		if e.Redelivery {
			x += " (a redelivery)"
		}
		out = append(out, x)
	}
	return strings.Join(out, ", ")
}

// ShortKey is a key's last 8 characters, enough to tell a run's keys
// apart in one line.
func ShortKey(k string) string {
	if len(k) <= 12 {
		return k
	}
	return "…" + k[len(k)-8:]
}
