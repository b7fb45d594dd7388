package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// lastByteSettle is how long the burst waits, once every request but its
// last byte is written, before releasing the last bytes: the server's
// time to parse every request's headers and enter its handler.
const lastByteSettle = 50 * time.Millisecond

// burster sends the same-key bursts of one case: by last-byte sync where
// it works, else released by a barrier over warmed connections (warmed
// once, on first need).
type burster struct {
	e       *Env
	size    int
	bases   []string
	carrier wire.Carrier // the warmed one, nil until needed
	done    func()
}

func (e *Env) newBurster(size int, bases ...string) *burster {
	return &burster{e: e, size: size, bases: bases}
}

// close closes the warmed connections, if any.
func (b *burster) close() {
	if b.done != nil {
		b.done()
	}
}

// send sends one burst of b.size requests under k with body; how says how
// they were released (and, after a fallback, why), for the evidence.
func (b *burster) send(ctx context.Context, k string, body []byte, label string) (rs []wire.Resp, how string) {
	e := b.e
	if h := e.inproc; h != nil && len(b.bases) == 0 {
		return e.inProcessBurst(ctx, h, k, b.size, body, label), inProcessHow
	}
	var why string
	if e.Profile.BurstSync != apispec.SyncBarrier {
		var ok bool
		if rs, how, ok, why = e.lastByteBurst(ctx, k, b.size, body, label, b.bases...); ok {
			work := e.workOf(e.Op, body)
			for i := range rs {
				rs[i].Work = work
			}
			return rs, how
		}
	}
	if b.carrier == nil {
		b.carrier, b.done = e.warm(ctx, b.size, b.bases...)
	}
	how = "released by a barrier"
	if why != "" {
		how += " (last-byte sync not possible: " + why + ")"
	}
	return e.burst(ctx, b.carrier, k, b.size, body, label, b.bases...), how
}

// lastByteBurst sends size requests under k by last-byte synchronisation
// (wire.LastBytes), each kept as evidence. ok is false, with why, when it
// cannot: no request of the burst was sent then (at most a warming GET),
// and the caller falls back to the barrier.
func (e *Env) lastByteBurst(ctx context.Context, k string, size int, body []byte, label string, bases ...string) (rs []wire.Resp, how string, ok bool, why string) {
	if len(body) == 0 {
		return nil, "", false, "the body is empty: no last byte to hold back"
	}
	lb, can := e.carrier.(wire.LastBytes)
	if !can {
		return nil, "", false, "the " + e.carrier.Name() + " carrier cannot hold back a request's last byte"
	}
	reqs := make([]Req, size)
	xs := make([]wire.Exchange, size)
	to := make([]string, size)
	for i := range reqs {
		r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body}
		to[i] = e.Target.BaseURL
		if len(bases) > 0 {
			r.Base = bases[i%len(bases)]
			r.Label += fmt.Sprintf(" on replica %d", i%len(bases)+1)
			to[i] = r.Base
		}
		reqs[i], xs[i] = r, e.exchange(r)
	}
	var around func(i int) func()
	if c := e.oracle; c != nil && c.global {
		around = func(i int) func() {
			c.enter(ctx, e, scopeOf(reqs[i]))
			return c.leave
		}
	}
	rs, sent, how, ok, why := lb.SendLastBytes(ctx, xs, to, e.timeout, around)
	for i, x := range sent {
		e.record(x.Redacted(e.Target))
		e.proveBy(reqs[i], rs[i])
	}
	return rs, how, ok, why
}
