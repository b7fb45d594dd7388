package load

import (
	"context"
	"net/http"
	"sync"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// setups makes, for an operation with a setup: (an action on an existing
// resource), each key's fresh resource once, before the key's first
// request, and keeps its values for the key's later requests. A keyless
// request gets a resource of its own every time. Setup requests go
// through a carrier of their own and are no measured request: no result,
// no count. The first failure is kept (failed) and the request goes out
// unbound, for the API to refuse.
type setups struct {
	ctx     context.Context
	t       *apispec.Target
	op      *apispec.Operation
	carrier wire.Carrier
	byKey   sync.Map // key → wire.SetupValues

	mu  sync.Mutex
	err error
}

func newSetups(ctx context.Context, t *apispec.Target, op *apispec.Operation, c wire.Carrier) *setups {
	if op.Setup == nil {
		return nil
	}
	return &setups{ctx: ctx, t: t, op: op, carrier: c}
}

// bind writes key's resource into u, h and body, making it first.
func (s *setups) bind(key, u string, h http.Header, body []byte) (string, []byte) {
	if s == nil {
		return u, body
	}
	vals, ok := s.byKey.Load(key)
	if !ok || key == "" {
		v, _, err := wire.DoSetup(s.ctx, s.carrier, s.t, s.op, 0, uuid.NewString(), "")
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			return u, body
		}
		vals = v
		if key != "" {
			vals, _ = s.byKey.LoadOrStore(key, v)
		}
	}
	x := wire.Exchange{Request: wire.ExchangeRequest{URL: u, Header: h, Body: body}}
	vals.(wire.SetupValues).Bind(&x)
	return x.Request.URL, x.Request.Body
}

// failed is the first setup that failed, nil when none did.
func (s *setups) failed() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
