package evidence

import (
	"context"
	"fmt"

	"github.com/idemcheck/idemcheck/wire"
)

// downstreamSource counts executions as the downstream double's calls of
// one route (oracle: {downstream: ROUTE}): per key, the calls that hold
// the key's token (Downstream.Token) or the key itself; once calibration found
// the calls carry no token, every call of the route (a global count).
type downstreamSource struct {
	d     *Downstream
	route string
}

func openDownstream(d *Downstream, route string) (Source, error) {
	if !d.runs() {
		return nil, fmt.Errorf("oracle.downstream %q: the double is not running (the config has no downstream:, or the Target was not started by StartDownstream)", route)
	}
	return &downstreamSource{d: d, route: route}, nil
}

func (s *downstreamSource) PerKey() bool { return !s.d.global.Load() }

// Sees: the API calls its provider while executing, whatever it answers
// its client and on whichever replica.
func (s *downstreamSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

func (s *downstreamSource) Count(_ context.Context, key string, _ func(wire.Exchange)) (int, error) {
	if !s.PerKey() {
		return s.d.srv.RouteCalls(s.route), nil
	}
	if key == "" {
		return 0, fmt.Errorf("oracle downstream %s: calls of requests sent without a key hold no token", s.route)
	}
	return s.d.Calls(key, s.route), nil
}

func (s *downstreamSource) Total(context.Context, func(wire.Exchange)) (int, bool, error) {
	return s.d.srv.RouteCalls(s.route), true, nil
}
