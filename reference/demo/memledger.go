package demo

import (
	"context"
	"sync"
)

// MemoryLedgerCap is how many charges the memory ledger keeps: the newest
// ones (GET of an older charge is 404), so a long-running serve stays
// bounded. The PostgreSQL ledger keeps everything.
const MemoryLedgerCap = 4096

// memoryLedger is the default Ledger: a map guarded by a mutex, with the
// ids in insertion order in a ring so the oldest is dropped at the cap.
type memoryLedger struct {
	mu      sync.RWMutex
	charges map[string]Charge
	order   []string // ring of ids once full
	next    int      // ring slot of the oldest id once full
	limit   int
}

// NewMemoryLedger returns an empty in-memory Ledger holding the newest
// MemoryLedgerCap charges.
func NewMemoryLedger() Ledger { return newMemoryLedger(MemoryLedgerCap) }

func newMemoryLedger(limit int) *memoryLedger {
	return &memoryLedger{charges: map[string]Charge{}, limit: limit}
}

func (l *memoryLedger) Insert(ctx context.Context, c Charge) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.charges[c.ID]; !dup {
		if len(l.order) < l.limit {
			l.order = append(l.order, c.ID)
		} else {
			delete(l.charges, l.order[l.next])
			l.order[l.next] = c.ID
			l.next = (l.next + 1) % l.limit
		}
	}
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
