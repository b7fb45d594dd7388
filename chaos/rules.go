package chaos

import (
	"math/rand/v2"
	"strconv"
	"sync"
)

// ruleSet is what both proxies (HTTP and gRPC) keep under one lock: the
// active rules, the seeded draws, each key's attempt numbers and the
// counters.
type ruleSet struct {
	mu       sync.Mutex
	maxKeys  int
	rules    []*Rule
	nextRule int
	rng      *rand.Rand
	attempts attemptCounts
	counters Counters
}

// Counters are what the proxy has done since start or the last reset.
type Counters struct {
	Requests       int64            `json:"requests"`
	Forwarded      int64            `json:"forwarded"`
	UpstreamErrors int64            `json:"upstream_errors"`
	Faults         map[string]int64 `json:"faults"`
}

func newRuleSet(seed uint64, maxKeys int) ruleSet {
	return ruleSet{maxKeys: maxKeys, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		attempts: newAttemptCounts(maxKeys), counters: Counters{Faults: map[string]int64{}}}
}

// add appends r with its ID and returns the copy stored.
func (p *ruleSet) add(r Rule) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextRule++
	r.ID = strconv.Itoa(p.nextRule)
	p.rules = append(p.rules, &r)
	return r
}

// Rules lists the active rules.
func (p *ruleSet) Rules() []Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = *r
	}
	return out
}

// RemoveRule deletes the rule with id; false when there is none.
func (p *ruleSet) RemoveRule(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.ID == id {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Reset removes every rule and forgets attempt numbers and counters.
func (p *ruleSet) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	p.attempts = newAttemptCounts(p.maxKeys)
	p.counters = Counters{Faults: map[string]int64{}}
}

// Counters returns a snapshot of the counters.
func (p *ruleSet) Counters() Counters {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counters
	c.Faults = make(map[string]int64, len(p.counters.Faults))
	for k, v := range p.counters.Faults {
		c.Faults[k] = v
	}
	return c
}

// draw counts a request, numbers key's attempt and chooses the first rule
// whose conditions hold (matches) and whose probability draw succeeds
// (nil: none). The draw comes after the conditions, so the seeded
// sequence depends only on the attempts a rule could select.
func (p *ruleSet) draw(key string, matches func(s *Select, attempt int) bool) (int, *Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counters.Requests++
	attempt := 0
	if key != "" {
		attempt = p.attempts.next(key)
	}
	for _, rule := range p.rules {
		if !matches(&rule.Select, attempt) {
			continue
		}
		if rule.Select.P >= 1 || p.rng.Float64() < rule.Select.P {
			p.counters.Faults[rule.Kind]++
			return attempt, rule
		}
	}
	return attempt, nil
}

func (p *ruleSet) count(forwarded, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if forwarded {
		p.counters.Forwarded++
	}
	if failed {
		p.counters.UpstreamErrors++
	}
}
