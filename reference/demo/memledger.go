package demo

import (
	"context"
	"sync"
)

// memoryLedger is the default Ledger: a map guarded by a mutex.
type memoryLedger struct {
	mu      sync.RWMutex
	charges map[string]Charge
}

// NewMemoryLedger returns an empty in-memory Ledger.
func NewMemoryLedger() Ledger { return &memoryLedger{charges: map[string]Charge{}} }

func (l *memoryLedger) Insert(ctx context.Context, c Charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.charges[c.ID] = c
	return nil
}

func (l *memoryLedger) Get(ctx context.Context, principal, id string) (Charge, bool, error) {
	if err := ctx.Err(); err != nil {
		return Charge{}, false, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	c, ok := l.charges[id]
	if !ok || c.Principal != principal {
		return Charge{}, false, nil
	}
	return c, true, nil
}

func (l *memoryLedger) Close() error { return nil }
