package double

import (
	"time"
)

// Call is one journal entry: a call the double received.
type Call struct {
	Time time.Time `json:"time"`
	// Route is the matched route's name, "" when none matched (404).
	Route  string `json:"route"`
	Method string `json:"method"`
	Path   string `json:"path"`
	// Token is the tracked string the call held, "" when none.
	Token string `json:"token,omitempty"`
	// Status is what the double answered (after Delay); 0 for a hung call.
	Status int           `json:"status"`
	Delay  time.Duration `json:"delay,omitempty"`
	Hung   bool          `json:"hung,omitempty"`
	// Abandoned: the caller gave up (closed the call) while the double
	// held its answer back (Delay or Hang), so it never got one. Whether a
	// real provider would have executed such a call is unknown.
	Abandoned bool `json:"abandoned,omitempty"`

	route int
	seq   int // totals.Calls when added: finds the entry again
}

// Totals counts every call the double received, whatever the journal
// kept.
type Totals struct {
	Calls     int `json:"calls"`
	Untokened int `json:"untokened"` // routed calls holding no tracked token
	Unrouted  int `json:"unrouted"`  // calls no route matched (answered 404)
	Dropped   int `json:"dropped"`   // journal entries dropped by the cap
}

// journal is a ring of the latest calls plus exact counts. The Server's
// mutex guards it.
type journal struct {
	ring      []Call
	next      int  // where the next call goes
	full      bool // ring wrapped at least once
	totals    Totals
	untokened []int // per route
	routed    []int // per route, every call
}

func newJournal(capacity, routes int) journal {
	return journal{ring: make([]Call, capacity), untokened: make([]int, routes), routed: make([]int, routes)}
}

func (j *journal) add(c Call) (at int) {
	j.totals.Calls++
	c.seq = j.totals.Calls
	switch {
	case c.route < 0:
		j.totals.Unrouted++
	default:
		j.routed[c.route]++
		if c.Token == "" {
			j.totals.Untokened++
			j.untokened[c.route]++
		}
	}
	if j.full {
		j.totals.Dropped++
	}
	at = j.next
	j.ring[j.next] = c
	j.next++
	if j.next == len(j.ring) {
		j.next, j.full = 0, true
	}
	return at
}

// abandon marks the entry added at at with seq as abandoned, unless the
// ring has dropped it since.
func (j *journal) abandon(at, seq int) {
	if j.ring[at].seq == seq {
		j.ring[at].Abandoned = true
	}
}

// each calls f on the kept calls, oldest first.
func (j *journal) each(f func(Call)) {
	if j.full {
		for _, c := range j.ring[j.next:] {
			f(c)
		}
	}
	for _, c := range j.ring[:j.next] {
		f(c)
	}
}

// Calls is the exact number of calls of route that held token (route "":
// of every route), kept even when the journal dropped them; 0 for a token
// not tracked.
func (s *Server) Calls(token, route string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.tracked[token]
	if st == nil {
		return 0
	}
	if route == "" {
		n := 0
		for _, c := range st.calls {
			n += c
		}
		return n
	}
	if ri := s.cfg.RouteIndex(route); ri >= 0 {
		return st.calls[ri]
	}
	return 0
}

// RouteCalls is the exact number of calls of route (tokened or not): a
// global count.
func (s *Server) RouteCalls(route string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if ri := s.cfg.RouteIndex(route); ri >= 0 {
		return s.j.routed[ri]
	}
	return 0
}

// Untokened is the exact number of calls of route (route "": every route)
// that held no tracked token.
func (s *Server) Untokened(route string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if route == "" {
		return s.j.totals.Untokened
	}
	if ri := s.cfg.RouteIndex(route); ri >= 0 {
		return s.j.untokened[ri]
	}
	return 0
}

// Totals counts every call so far.
func (s *Server) Totals() Totals {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.j.totals
}

// Journal lists the kept calls that held token, oldest first (token "":
// every kept call).
func (s *Server) Journal(token string) []Call {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Call
	s.j.each(func(c Call) {
		if token == "" || c.Token == token {
			out = append(out, c)
		}
	})
	return out
}
