package scenarios

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// bindSetup makes, for an operation with a setup: (an action on an
// existing resource), the fresh resource r's key acts on, and binds its
// values into x. One setup per key and principal: every request under a
// key names the same resource, and another principal reusing the key gets
// a resource of its own (one it may act on). The setup's exchange is kept
// as evidence; it is sent under a key of its own and under a global
// counter's scope of its own, so no count sees it. A setup that fails
// leaves x unbound and makes the case inconclusive (keyError); the run's
// start check (evidence.CheckNormal) already stopped a run whose setup
// never works, with one line.
func (e *Env) bindSetup(op *apispec.Operation, r Req, x *wire.Exchange) {
	if op.Setup == nil {
		return
	}
	of := scopeOf(r)
	if r.SetupOf != "" {
		of = r.SetupOf
	}
	scope := op.Name + "\x00" + of + "\x00" + strconv.Itoa(r.Principal)
	e.setupMu.Lock()
	defer e.setupMu.Unlock()
	vals, ok := e.setups[scope]
	if !ok {
		vals = e.setup(op, r)
		if e.setups == nil {
			e.setups = map[string]wire.SetupValues{}
		}
		e.setups[scope] = vals
	}
	vals.Bind(x)
}

// setup sends op's setup request for r and returns the values it binds
// (nil when it failed: the failure is kept for keyError).
func (e *Env) setup(op *apispec.Operation, r Req) wire.SetupValues {
	if e.setupVia != nil {
		// Through a fault proxy the case's own requests are cut or
		// dropped; a setup is no request of the case's: it goes straight
		// to the target, and its failure makes the outer case inconclusive.
		return e.setupVia.setup(op, r)
	}
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	key := uuid.NewString()
	if c := e.oracle; c != nil && c.global {
		c.enter(ctx, e, "\x00setup:"+key)
		defer c.leave()
	}
	principal := max(r.Principal, 0) // a request without credentials still acts on someone's resource
	vals, x, err := wire.DoSetup(ctx, e.carrier, e.Target, op, principal, key, r.Base)
	e.record(x.Redacted(e.Target))
	if err != nil {
		e.mu.Lock()
		if e.keyErr == nil {
			e.keyErr = err
		}
		e.mu.Unlock()
		return nil
	}
	return vals
}
