package drive

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/internal/managed"
)

// killer SIGKILLs a random replica every interval and restarts it: a
// crash in the middle of whatever that replica was executing.
type killer struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	kills  int
}

func startKiller(ctx context.Context, ms []*managed.Process, every time.Duration, seed uint64) *killer {
	ctx, cancel := context.WithCancel(ctx)
	k := &killer{cancel: cancel, done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, 0x6b111))
	go func() {
		defer close(k.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// Restart kills, starts again on the same port and waits
			// until it answers (bounded by the managed-target timeout).
			if err := ms[rng.IntN(len(ms))].Restart(ctx); err != nil && ctx.Err() == nil {
				return // the replica did not come back: the others carry on
			}
			k.mu.Lock()
			k.kills++
			k.mu.Unlock()
		}
	}()
	return k
}

// stop ends the killing and returns how many kills happened; nil-safe
// and safe to call again.
func (k *killer) stop() int {
	if k == nil {
		return 0
	}
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kills
}
