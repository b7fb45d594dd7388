package chaos

import (
	"errors"
	"time"

	"github.com/idemcheck/idemcheck/internal/clock"
)

// delay holds the attempt before forwarding (the request reaches the
// upstream late) and/or before answering (the upstream is done, the
// client still waits: a client timeout here is a lost response).
type delay struct{ before, after time.Duration }

func init() {
	register("delay", func(p params) (Fault, error) { return parseDelay(p) })
	registerGRPC("delay", func(p params) (grpcFault, error) { return parseDelay(p) })
}

func parseDelay(p params) (delay, error) {
	before, err := p.duration("before", 0)
	if err != nil {
		return delay{}, err
	}
	after, err := p.duration("after", 0)
	if err != nil {
		return delay{}, err
	}
	if before == 0 && after == 0 {
		return delay{}, errors.New("delay needs before=D and/or after=D (e.g. before=200ms)")
	}
	return delay{before, after}, nil
}

func (delay) Kind() string { return "delay" }

func (f delay) Serve(x *Relay) {
	if !x.sleep(f.before) {
		x.Abort("fin")
		return
	}
	u := x.Forward(x.Body)
	if !x.sleep(f.after) {
		x.Abort("fin")
		return
	}
	x.Respond(u)
}

// serveGRPC holds the call the same way; a client that leaves meanwhile
// (its deadline) gets nothing more.
func (f delay) serveGRPC(x *callExchange) error {
	if !x.sleep(f.before) {
		return x.gone()
	}
	u := x.Forward()
	if !x.sleep(f.after) {
		return x.gone()
	}
	return x.respond(u)
}

// sleep waits d unless the client goes away first (then false).
func (x *Relay) sleep(d time.Duration) bool {
	return d <= 0 || clock.Until(x.r.Context(), time.Now().Add(d)) == nil
}
