package drive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// keyOps remembers each key's operation, so that the proxy reads the id
// of each answer at its own operation's pointer (an update's version, none
// where the operation declares none), never one operation's for all.
type keyOps struct{ m sync.Map }

func (k *keyOps) set(key string, op *apispec.Operation) { k.m.Store(key, op) }

// mark is the execution mark of body, a 2xx answer under key
// (apispec.Operation.ExecutionMark): "" for a key the driver never sent.
func (k *keyOps) mark(key string, body []byte) string {
	v, ok := k.m.Load(key)
	if !ok {
		return ""
	}
	return v.(*apispec.Operation).ExecutionMark(body)
}

// WithOperations runs only the named operations (default: all), as run's
// --run selects cases.
func WithOperations(names ...string) Option {
	return func(c *config) { c.operations = append(c.operations, names...) }
}

// selectOperations narrows c.target to c.operations; the error names an
// operation the target does not have.
func (c *config) selectOperations() error {
	if len(c.operations) == 0 {
		return nil
	}
	var known []string
	var ops []apispec.Operation
	for _, op := range c.target.Operations {
		known = append(known, op.Name)
		if slices.Contains(c.operations, op.Name) {
			ops = append(ops, op)
		}
	}
	for _, name := range c.operations {
		if !slices.Contains(known, name) {
			return fmt.Errorf("--operation %q: no such operation (have: %s)", name, strings.Join(known, ", "))
		}
	}
	t := *c.target
	t.Operations = ops
	c.target = &t
	return nil
}

// setup makes the fresh resource key's attempts act on, when op has a
// setup: sent straight to the target (not through the fault proxy, not in
// the history: no fault or count is about it). The error is one line.
func (d *driver) setup(ctx context.Context, op *apispec.Operation) (wire.SetupValues, error) {
	if op.Setup == nil {
		return nil, nil
	}
	vals, _, err := wire.DoSetup(ctx, d.direct, d.cfg.target, op, 0, uuid.NewString(), "")
	return vals, err
}
