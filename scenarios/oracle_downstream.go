package scenarios

import (
	"context"
	"fmt"
)

// downstreamSource counts executions as the downstream double's calls of
// one route (oracle: {downstream: ROUTE}): per key, the calls that hold
// the key's token (Target.token) or the key itself; once calibration found
// the calls carry no token, every call of the route (a global count).
type downstreamSource struct {
	t     *Target
	route string
}

func openDownstream(t *Target, route string) (Source, error) {
	if t.downstream == nil {
		return nil, fmt.Errorf("oracle.downstream %q: the double is not running (the config has no downstream:, or the Target was not started by StartDownstream)", route)
	}
	return &downstreamSource{t: t, route: route}, nil
}

func (s *downstreamSource) PerKey() bool { return !s.t.downstream.global.Load() }

// Sees: the API calls its provider while executing, whatever it answers
// its client and on whichever replica.
func (s *downstreamSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

func (s *downstreamSource) Count(_ context.Context, key string, _ func(Exchange)) (int, error) {
	if !s.PerKey() {
		return s.t.downstream.srv.RouteCalls(s.route), nil
	}
	if key == "" {
		return 0, fmt.Errorf("oracle downstream %s: calls of requests sent without a key hold no token", s.route)
	}
	return s.t.downstreamCalls(key, s.route), nil
}

func (s *downstreamSource) Total(context.Context, func(Exchange)) (int, bool, error) {
	return s.t.downstream.srv.RouteCalls(s.route), true, nil
}
