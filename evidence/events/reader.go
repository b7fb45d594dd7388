package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Event is one published event attributed to a key.
type Event struct {
	Key string `json:"key"`
	// ID is the value at Config.EventID ("" when none is configured, or
	// the event has none).
	ID string `json:"id,omitempty"`
	// Position is where the broker keeps it: "partition 2 offset 15"
	// (Kafka), the entry id (Redis), "sequence 42" (NATS).
	Position string `json:"position"`
	// Time is the broker's (or the producer's) timestamp.
	Time time.Time `json:"time"`
	// Resource is the value at Config.ResourceID: the id of the resource
	// the event announces ("" when none is configured or found).
	Resource string `json:"resource,omitempty"`
	// Redelivery: an earlier event of the key had the same ID. It is the
	// same execution delivered again (at-least-once delivery), not counted
	// as another.
	Redelivery bool `json:"redelivery,omitempty"`

	read int // its rank among the events read since Open: the order across a key and its marker token
}

// Tally is what Settle found for one key.
type Tally struct {
	Key string `json:"key"`
	// Executions is the number of events, each id counted once (an event
	// without an id counts as its own).
	Executions int `json:"executions"`
	// Redeliveries is the number of events that repeat an earlier id.
	Redeliveries int     `json:"redeliveries,omitempty"`
	Events       []Event `json:"events"`
	// Settled: the count did not change for the settle time. An unsettled
	// count is no evidence either way (the caller makes it inconclusive).
	Settled bool `json:"settled"`
}

// Stats describes every event read since Open, attributed or not.
type Stats struct {
	Read         int `json:"read"`
	Unattributed int `json:"unattributed"`
	// WhyUnattributed says why the first unattributed event was (no
	// header of that name, nothing at the pointer, a payload not JSON).
	WhyUnattributed string `json:"why_unattributed,omitempty"`
}

// message is one raw event as a source delivers it.
type message struct {
	header   func(name string) (string, bool)
	payload  []byte
	position string
	time     time.Time
}

// source is one broker's stream, read from the position it had at Open.
type source interface {
	// catchUp reads every message published before it was called (the
	// stream's head at that moment), passing each to add in order.
	catchUp(ctx context.Context, add func(message)) error
	close() error
}

// maxEvents bounds the events a Reader keeps: a topic busier than this
// during one run is not a place to count one API's events.
const maxEvents = 1 << 20

// catchUpTimeout bounds one catch-up: a broker that cannot serve what it
// says it holds within it is an error, not a count.
const catchUpTimeout = 20 * time.Second

// Reader counts the events of each key published since Open. It is safe
// for concurrent use.
type Reader struct {
	cfg    eventspec.Config
	src    source
	marker func(key string) string

	catchMu sync.Mutex // one catch-up at a time
	mu      sync.Mutex
	keys    map[string]*keyEvents
	stats   Stats
	kept    int
}

type keyEvents struct {
	events []Event
	ids    map[string]bool
	seen   time.Time // when the latest event was read: an upper bound of its arrival
}

// Option configures a Reader at Open.
type Option func(*Reader)

// WithMarker makes the events that name a key's marker token (token(key):
// the token idemcheck writes into the key's requests at the operation's
// marker:) that key's, beside those that name the key itself: an API may
// copy either into its event (a header, or the member Config.Key points
// at). A token("") of "" names no key.
func WithMarker(token func(key string) string) Option {
	return func(r *Reader) { r.marker = token }
}

// Open validates cfg and opens its stream at the position the stream has
// now. The error is one line naming the field at fault.
func Open(ctx context.Context, cfg eventspec.Config, opts ...Option) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var src source
	var err error
	switch {
	case cfg.Kafka != nil:
		src, err = openKafka(ctx, cfg.Kafka)
	case cfg.Redis != nil:
		src, err = openRedis(ctx, cfg.Redis)
	case cfg.NATS != nil:
		src, err = openNATS(ctx, cfg.NATS)
	}
	if err != nil {
		return nil, err
	}
	r := &Reader{cfg: cfg, src: src, keys: map[string]*keyEvents{}}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// Close releases the broker connection.
func (r *Reader) Close() error { return r.src.close() }

// Config is the validated configuration (defaults filled in).
func (r *Reader) Config() eventspec.Config { return r.cfg }

// Count reads up to the stream's head and returns key's executions (each
// event id once) and its events, without waiting for late ones.
func (r *Reader) Count(ctx context.Context, key string) (n int, evs []Event, err error) {
	if err := r.catchUp(ctx); err != nil {
		return 0, nil, err
	}
	t := r.tally(key, false)
	return t.Executions, t.Events, nil
}

// Stats reads up to the stream's head and describes every event read since
// Open (a start check: none at all means a wrong topic; none attributed,
// a wrong key header or pointer).
func (r *Reader) Stats(ctx context.Context) (Stats, error) {
	if err := r.catchUp(ctx); err != nil {
		return Stats{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats, nil
}

// Settle re-reads the counts of keys until none has changed for the
// settle time, counted from since at the earliest (the time of the keys'
// last answer; zero: now). It gives up after SettleFactor settle times:
// a key whose count still changed within the last settle time then comes
// back with Settled false. Only a broker failure is an error.
func (r *Reader) Settle(ctx context.Context, since time.Time, keys ...string) ([]Tally, error) {
	start := time.Now()
	if since.IsZero() || since.After(start) {
		since = start
	}
	settle := r.cfg.Settle
	bound := start.Add(eventspec.SettleFactor * settle)
	poll := min(max(settle/5, 20*time.Millisecond), 250*time.Millisecond)
	changed := make([]time.Time, len(keys))
	counts := make([]int, len(keys))
	for i := range counts {
		counts[i] = -1
	}
	for {
		if err := r.catchUp(ctx); err != nil {
			return nil, err
		}
		now := time.Now()
		calm := true
		r.mu.Lock()
		for i, k := range keys {
			evs, seen := r.eventsOf(k)
			if n := len(evs); n != counts[i] {
				counts[i] = n
				// seen is when the latest event was read, at or after
				// its arrival: waiting from it never waits too little.
				changed[i] = since
				if seen.After(since) {
					changed[i] = seen
				}
			}
			calm = calm && now.Sub(changed[i]) >= settle
		}
		r.mu.Unlock()
		if calm || now.After(bound) {
			out := make([]Tally, len(keys))
			for i, k := range keys {
				out[i] = r.tally(k, now.Sub(changed[i]) >= settle)
			}
			return out, nil
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// eventsOf is key's events in the order read, those that name its marker
// token included, and when the latest was read. r.mu is held.
func (r *Reader) eventsOf(key string) ([]Event, time.Time) {
	var own, marked *keyEvents
	own = r.keys[key]
	if r.marker != nil {
		if tok := r.marker(key); tok != "" && tok != key {
			marked = r.keys[tok]
		}
	}
	switch {
	case marked == nil && own == nil:
		return nil, time.Time{}
	case marked == nil:
		return own.events, own.seen
	case own == nil:
		own = &keyEvents{}
	}
	evs := slices.Concat(own.events, marked.events)
	slices.SortStableFunc(evs, func(a, b Event) int { return a.read - b.read })
	// A redelivery is a repeat of an id among all of the key's events.
	ids := map[string]bool{}
	for i := range evs {
		evs[i].Key = key
		evs[i].Redelivery = evs[i].ID != "" && ids[evs[i].ID]
		ids[evs[i].ID] = true
	}
	seen := own.seen
	if marked.seen.After(seen) {
		seen = marked.seen
	}
	return evs, seen
}

// tally is key's current count.
func (r *Reader) tally(key string, settled bool) Tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := Tally{Key: key, Settled: settled, Events: []Event{}}
	evs, _ := r.eventsOf(key)
	t.Events = append(t.Events, evs...)
	for _, e := range t.Events {
		if e.Redelivery {
			t.Redeliveries++
		} else {
			t.Executions++
		}
	}
	return t
}

func (r *Reader) catchUp(ctx context.Context) error {
	r.catchMu.Lock()
	defer r.catchMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	seen := time.Now()
	err := r.src.catchUp(ctx, func(m message) { r.add(m, seen) })
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("events: %s: reading up to the stream's head took over %s", r.cfg.String(), catchUpTimeout)
		}
		return fmt.Errorf("events: %s: %w", r.cfg.String(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kept > maxEvents {
		return fmt.Errorf("events: %s: over %d events since the run started; count on a stream of the API under test alone", r.cfg.String(), maxEvents)
	}
	return nil
}

// add attributes one message to its key.
func (r *Reader) add(m message, seen time.Time) {
	key, id, resource, why := r.attribute(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Read++
	if why != "" {
		r.stats.Unattributed++
		if r.stats.WhyUnattributed == "" {
			r.stats.WhyUnattributed = fmt.Sprintf("%s: %s", m.position, why)
		}
		return
	}
	r.kept++
	if r.kept > maxEvents {
		return
	}
	ke := r.keys[key]
	if ke == nil {
		ke = &keyEvents{ids: map[string]bool{}}
		r.keys[key] = ke
	}
	e := Event{Key: key, ID: id, Resource: resource, Position: m.position, Time: m.time, read: r.stats.Read}
	if id != "" {
		e.Redelivery = ke.ids[id]
		ke.ids[id] = true
	}
	ke.events = append(ke.events, e)
	ke.seen = seen
}

// attribute finds m's key, id and resource id; why says why it has no key.
func (r *Reader) attribute(m message) (key, id, resource, why string) {
	var doc any
	var docErr error
	decoded := false
	at := func(p string) (string, string) {
		if !decoded {
			decoded = true
			d := json.NewDecoder(bytes.NewReader(m.payload))
			d.UseNumber()
			docErr = d.Decode(&doc)
		}
		if docErr != nil {
			return "", "the payload is not JSON"
		}
		v, ok := jsonx.Pointer(doc, p)
		if !ok {
			return "", "nothing at " + p
		}
		switch v := v.(type) {
		case string:
			return v, ""
		case json.Number:
			return v.String(), ""
		}
		return "", fmt.Sprintf("the value at %s is not a string", p)
	}
	if h := r.cfg.Key.Header; h != "" {
		v, ok := m.header(h)
		if !ok {
			return "", "", "", "no header " + h
		}
		key = v
	} else if key, why = at(r.cfg.Key.Pointer); why != "" {
		return "", "", "", why
	}
	if key == "" {
		return "", "", "", "an empty key"
	}
	if r.cfg.EventID != "" {
		// An event without an id is still an event: it counts on its own.
		id, _ = at(r.cfg.EventID)
	}
	if r.cfg.ResourceID != "" {
		resource, _ = at(r.cfg.ResourceID)
	}
	return key, id, resource, ""
}

// headerFold looks name up case-insensitively in pairs of (name, value).
func headerFold[T any](items []T, name func(T) string, value func(T) string) func(string) (string, bool) {
	return func(want string) (string, bool) {
		for _, it := range items {
			if strings.EqualFold(name(it), want) {
				return value(it), true
			}
		}
		return "", false
	}
}
