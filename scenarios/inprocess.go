package scenarios

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemcheck/idemcheck/wire"
)

// inProcessHow says, for the evidence, how an in-process burst was sent.
const inProcessHow = "called in-process: the handler itself, from goroutines released together (no network between them)"

// inProcessBurst sends size requests under k with body by calling h from
// size goroutines released together (wire.InProcess), each kept as
// evidence.
func (e *Env) inProcessBurst(ctx context.Context, h http.Handler, k string, size int, body []byte, label string) []wire.Resp {
	reqs := make([]Req, size)
	xs := make([]wire.Exchange, size)
	for i := range reqs {
		r := Req{Label: fmt.Sprintf("%s %d", label, i+1), Key: k, Body: body}
		reqs[i], xs[i] = r, e.exchange(r)
	}
	ip := wire.InProcess{Handler: h, Timeout: e.timeout}
	if c := e.oracle; c != nil && c.global {
		ip.Around = func(i int) func() {
			c.enter(ctx, e, scopeOf(reqs[i]))
			return c.leave
		}
	}
	rs, sent := ip.Burst(ctx, xs)
	work := e.workOf(e.Op, body)
	for i, x := range sent {
		rs[i].Work = work
		e.record(x.Redacted(e.Target))
		e.proveBy(reqs[i], rs[i])
	}
	return rs
}

// inProcessRoundFactor multiplies a burst case's rounds when they are
// called in-process: a round takes milliseconds, and on a machine whose
// other work keeps a processor from running a released goroutine at once,
// a narrow window is entered by two requests in only some rounds.
const inProcessRoundFactor = 16

// inProcessRounds is the factor on a burst case's rounds: its requests to
// bases (replicas) go over the network.
func (e *Env) inProcessRounds(bases []string) int {
	if e.inproc != nil && len(bases) == 0 {
		return inProcessRoundFactor
	}
	return 1
}

// runsAlone reports an instance that runs after the others, alone: the
// same-key burst called in-process, whose released goroutines enter the
// handler together only when no other case keeps the processors busy.
func runsAlone(h http.Handler, in instance) bool {
	return h != nil && in.ID == "concurrent/same-key-burst"
}

// exchangeMark is how many exchanges the case has recorded so far.
func (e *Env) exchangeMark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.exchanges)
}

// keepReportedRound keeps, of the many rounds of an in-process burst,
// the exchanges of the round the verdict reports: a round recorded from
// mark that is now the one reported replaces the earlier ones; another
// is dropped. Thousands of replays would otherwise bury the round that
// shows the double execution. Network bursts keep every round.
func (e *Env) keepReportedRound(bases []string, mark int, reported bool) {
	if e.inProcessRounds(bases) == 1 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if reported {
		e.exchanges = append([]wire.Exchange(nil), e.exchanges[mark:]...)
	} else {
		e.exchanges = e.exchanges[:mark]
	}
}
