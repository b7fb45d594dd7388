package evidence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// Source is one place where executions of the API under test are counted
// from outside: an HTTP counter, a list endpoint, a SQL query (one file
// per source: http.go, list.go, sql.go, downstream_source.go,
// events_source.go). The engine, the load checker and the chaos driver
// ask every source the same questions through Evidence; nothing else
// knows which source it is.
type Source interface {
	// Count reads the executions of key (the bare key, unquoted) when the
	// source counts per key, else of every key. rec, when not nil, keeps
	// the probe's HTTP exchange as evidence.
	Count(ctx context.Context, key string, rec func(wire.Exchange)) (int, error)
	// Total reads the executions of every key; ok is false when the
	// source has no such count (a per-key URL with the key in its path).
	Total(ctx context.Context, rec func(wire.Exchange)) (n int, ok bool, err error)
	// PerKey reports whether Count answers for one key.
	PerKey() bool
	// Sees says which executions the source can count.
	Sees() Sight
}

// Sight is what an evidence source can see (docs/evidence.md has the
// table).
type Sight struct {
	// ErrorAnswers: an execution that answered an error (a 4xx or 5xx
	// after the side effect) is counted.
	ErrorAnswers bool
	// LostResponses: an execution whose response never reached the client
	// is counted.
	LostResponses bool
	// Replicas: executions on every replica are counted.
	Replicas bool
	// Principals are the principals (indexes) whose executions are
	// counted, when the source reads with their credentials (an HTTP
	// oracle: a tenant-scoped view may show no one else's); nil: every
	// principal's (a database, the double).
	Principals []int
}

// Evidence is a run's open sources: the target's oracles, one source per
// replica where they count per replica, and its events source. Open it
// once per run (Open) and Close it at the end.
type Evidence struct {
	t       *apispec.Target
	d       *Downstream
	sources []Source
	perKey  bool
	// events is the events source (nil: no events: section): one of
	// sources when no oracle is configured, else beside them.
	events *Events
}

// Open opens the sources of t's oracles and its events source; HTTP
// probes go over c, and d is the run's downstream double (nil when none
// runs; an oracle counting its calls then fails to open). The events
// source is the oracle when t has none. Evidence is nil (and no error)
// when t has neither.
func Open(ctx context.Context, t *apispec.Target, c *http.Client, d *Downstream) (*Evidence, error) {
	evs, err := OpenEvents(ctx, t, d)
	if err != nil {
		return nil, err
	}
	os := t.Oracles()
	if len(os) == 0 {
		if evs == nil {
			return nil, nil
		}
		return &Evidence{t: t, d: d, sources: []Source{evs}, perKey: true, events: evs}, nil
	}
	ev := &Evidence{t: t, d: d, perKey: os[0].PerKey(), events: evs}
	for _, o := range os {
		ss, err := open(o, t, c, d)
		if err != nil {
			_ = ev.Close()
			return nil, errors.New(t.Redact(err.Error()))
		}
		ev.sources = append(ev.sources, ss...)
	}
	return ev, nil
}

// Events is the events source (nil: no events: section, or ev is nil).
func (ev *Evidence) Events() *Events {
	if ev == nil {
		return nil
	}
	return ev.events
}

// EventsOnly reports that the events source is the only one: the run's
// oracle.
func (ev *Evidence) EventsOnly() bool {
	return ev != nil && ev.events != nil && len(ev.sources) == 1 && ev.sources[0] == Source(ev.events)
}

// PerKey reports whether the sources count per key; else each counts every
// execution and a run must send one key at a time to attribute them. A
// downstream source turns global when calibration finds its calls
// untokened: the run's sources all count globally from then on.
func (ev *Evidence) PerKey() bool {
	for _, s := range ev.sources {
		if !s.PerKey() {
			return false
		}
	}
	return ev.perKey
}

// Count sums the sources' counts for key (see Source.Count); errors are
// redacted.
func (ev *Evidence) Count(ctx context.Context, key string, rec func(wire.Exchange)) (int, error) {
	total := 0
	for _, s := range ev.sources {
		n, err := s.Count(ctx, key, rec)
		if err != nil {
			return 0, errors.New(ev.t.Redact(err.Error()))
		}
		total += n
	}
	return total, nil
}

// Total sums the sources' totals; ok is false when one has none.
func (ev *Evidence) Total(ctx context.Context, rec func(wire.Exchange)) (int, bool, error) {
	total := 0
	for _, s := range ev.sources {
		n, ok, err := s.Total(ctx, rec)
		if err != nil {
			return 0, true, errors.New(ev.t.Redact(err.Error()))
		}
		if !ok {
			return 0, false, nil
		}
		total += n
	}
	return total, true, nil
}

// Sees is what every source sees.
func (ev *Evidence) Sees() Sight {
	all := Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
	everyone := false // a source sees every principal's executions
	for _, s := range ev.sources {
		x := s.Sees()
		all.ErrorAnswers = all.ErrorAnswers && x.ErrorAnswers
		all.LostResponses = all.LostResponses && x.LostResponses
		all.Replicas = all.Replicas && x.Replicas
		everyone = everyone || x.Principals == nil
		for _, p := range x.Principals {
			if !slices.Contains(all.Principals, p) {
				all.Principals = append(all.Principals, p)
			}
		}
	}
	if everyone {
		all.Principals = nil
	}
	return all
}

// Close releases the sources (a SQL pool); nil-safe.
func (ev *Evidence) Close() error {
	if ev == nil {
		return nil
	}
	var errs []error
	for _, s := range ev.sources {
		if c, ok := s.(io.Closer); ok && s != Source(ev.events) {
			errs = append(errs, c.Close())
		}
	}
	errs = append(errs, ev.events.Close())
	return errors.Join(errs...)
}

// LagSettle bounds how long a count below what the answers prove is
// re-read before it is reported as not settled.
const LagSettle = 2 * time.Second

// CalibrationWait bounds how long a count may lag behind its response:
// as long as a case's count is re-read (LagSettle).
const CalibrationWait = LagSettle
