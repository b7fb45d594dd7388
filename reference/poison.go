package reference

import (
	"sync"
	"time"
)

// poisonCache holds the answers the store-conflicts defect saves for a
// scope. Entries die with the record they shadow, and every insert sweeps a
// few expired ones, so the cache stays bounded.
type poisonCache struct {
	mu      sync.Mutex
	entries map[Scope]poisoned
}

type poisoned struct {
	resp    Response
	expires time.Time
}

func newPoisonCache() *poisonCache { return &poisonCache{entries: map[Scope]poisoned{}} }

func (p *poisonCache) put(s Scope, resp Response, expires time.Time) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	swept := 0
	for k, e := range p.entries {
		if swept == 8 {
			break
		}
		if now.After(e.expires) {
			delete(p.entries, k)
		}
		swept++
	}
	p.entries[s] = poisoned{resp: resp, expires: expires}
}

func (p *poisonCache) get(s Scope) (Response, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[s]
	if !ok || time.Now().After(e.expires) {
		return Response{}, false
	}
	return e.resp, true
}
