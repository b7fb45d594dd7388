package load

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// How Summary.LatencyFrom says latencies were timed.
const (
	// LatencyFromSend: from when a worker sent the request, as reports
	// of HTTP runs said before their latencies were retimed; a send the
	// worker cap held back omits its wait (Summary.Delayed).
	LatencyFromSend = "send"
	// LatencyFromIntended: from when the rate plan meant the request to
	// leave (the paced client), so a send held back by busy workers
	// counts its wait, as its user would have (no coordinated omission).
	// Every run now.
	LatencyFromIntended = "intended"
)

// pacedAttacker is the open-model client of every run, in place of
// vegeta's Attacker: over HTTP it sends the requests as built (directHTTP,
// leaner than vegeta's worker), over any carrier that is not wire.Verbatim
// (gRPC; GraphQL, JSON-RPC and MCP, whose sessions and answers the carrier
// keeps) through the carrier's Do. Both give vegeta Results tagged the
// same way, so one collector, checker, results file and report read
// either. It paces sends with the plan's vegeta pacer, hands each to one
// of a bounded set of workers (more started, up to maxWork, when all are
// busy, as vegeta does), bounds each call by the run's timeout, and times
// each result from the send's intended time.
// Every send the plan schedules within the phase is made, however late
// (the users of an open model arrive on schedule): the phase ends once the
// last one was handed out. A send that waited longer than the timeout for
// a free worker is not made: its user would have given up; its result is
// a transport error. So a phase ends at most about two timeouts late.
// Calls go through the run's carrier (wire.Carrier's Do, as the engine's
// and chaos's: the key in its field or metadata as Build wrote it, the
// answer in the profile's terms), and each answer's sums for the replay
// check are taken from the whole body Do returns (replaySums.wholeBody),
// as the direct send takes them from an HTTP answer.
type pacedAttacker struct {
	carrier          wire.Carrier // nil when direct sends
	direct           *directHTTP  // a wire.Verbatim carrier's requests, as built
	sums             *replaySums  // nil: no replay check (nokey)
	workers, maxWork uint64
	timeout          time.Duration // the carrier's per-call bound
	maxBody          int64         // as vegeta.MaxBody: -1 keeps whole bodies
	stopOnce         sync.Once
	stopch           chan struct{}
	// delayed counts sends that left more than lateTolerance after they
	// were due because every worker was busy (Summary.Delayed).
	delayed atomic.Uint64
}

func newPaced(carrier wire.Carrier, sums *replaySums, timeout time.Duration, workers, maxWork uint64, maxBody int64) *pacedAttacker {
	return &pacedAttacker{carrier: carrier, sums: sums, workers: min(workers, maxWork), maxWork: maxWork, timeout: timeout,
		maxBody: maxBody, stopch: make(chan struct{})}
}

// Stop ends the attack: no tick leaves after it; calls in flight finish
// (each within the client's timeout) and their results are delivered. It
// reports whether this call stopped it, as vegeta's does.
func (a *pacedAttacker) Stop() bool {
	stopped := false
	a.stopOnce.Do(func() { close(a.stopch); stopped = true })
	return stopped
}

// closedLoop reports a pacer that paces nothing (max@, the warm-up): a
// send is due when a worker is free.
func closedLoop(p vegeta.Pacer) bool {
	r, ok := p.(vegeta.Rate)
	return ok && r.Freq == 0
}

// Attack makes the sends the pacer schedules within du (a closed loop:
// sends until du has passed; du 0: until Stop or the targeter fails) and
// closes the channel once every call has answered.
func (a *pacedAttacker) Attack(tr vegeta.Targeter, p vegeta.Pacer, du time.Duration, name string) <-chan *vegeta.Result {
	began := time.Now()
	// A tick is the time its send is due; zero in a closed loop (due when
	// taken).
	ticks := make(chan time.Time)
	// Buffered: a worker hands its result over and takes the next tick
	// without waiting for the collector to be scheduled.
	results := make(chan *vegeta.Result, a.maxWork)
	var wg sync.WaitGroup
	var seq atomic.Uint64
	spawn := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for due := range ticks {
				results <- a.hit(tr, name, due, seq.Add(1)-1)
			}
		}()
	}
	workers := a.workers
	for range workers {
		spawn()
	}
	closed := closedLoop(p)
	go func() {
		defer func() {
			close(ticks)
			wg.Wait()
			close(results)
			a.Stop()
		}()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		// at is the previous tick's offset from began. The pacers are
		// functions of (elapsed, hits): asked as of the previous tick, they
		// say when the next is due, whenever the loop gets to ask, so a
		// late loop does not move the schedule (vegeta asks as of now and
		// sends an overdue tick at once, timed from then).
		var at time.Duration
		for count := uint64(0); ; count++ {
			if closed && du > 0 && time.Since(began) > du {
				return
			}
			var due time.Time
			if !closed {
				wait, stop := p.Pace(at, count)
				if stop {
					return
				}
				at += wait
				if du > 0 && at > du {
					return
				}
				due = began.Add(at)
				if d := time.Until(due); d > 0 {
					timer.Reset(d)
					select {
					case <-timer.C:
					case <-a.stopch:
						return
					}
				}
			}
			select {
			case ticks <- due:
				continue
			case <-a.stopch:
				return
			default: // every worker is busy
			}
			atCap := workers >= a.maxWork
			if !atCap {
				workers++
				spawn()
			}
			select {
			case ticks <- due:
			case <-a.stopch:
				return
			}
			if atCap && !closed && time.Since(due) > lateTolerance {
				a.delayed.Add(1)
			}
		}
	}()
	return results
}

// hit makes one call, timed from due (now when zero), as vegeta's
// Attacker.hit makes one request: the targeter's failure stops the attack,
// the body kept is cut at maxBody, and a non-2xx/3xx answer's status is
// the result's error. A call already due longer than the timeout is not
// made (its target is still taken, so the result says which path and key).
func (a *pacedAttacker) hit(tr vegeta.Targeter, name string, due time.Time, seq uint64) *vegeta.Result {
	if due.IsZero() {
		due = time.Now()
	}
	abandoned := a.timeout > 0 && time.Since(due) > a.timeout
	res := &vegeta.Result{Attack: name, Seq: seq, Timestamp: due}
	defer func() { res.Latency = time.Since(due) }()
	var tgt vegeta.Target
	if err := tr(&tgt); err != nil {
		a.Stop()
		res.Error = err.Error()
		return res
	}
	res.Method, res.URL = tgt.Method, tgt.URL
	if abandoned {
		res.Error = fmt.Sprintf("not sent: no worker was free within the %s timeout of its intended send", a.timeout)
		return res
	}
	// The fragment (path and key, vegetaTarget) is the result's, never sent.
	u, _, _ := strings.Cut(tgt.URL, "#")
	if a.direct != nil {
		a.direct.send(res, &tgt, u, a.sums, a.maxBody)
		return res
	}
	resp, _ := a.carrier.Do(context.Background(), wire.Exchange{Request: wire.ExchangeRequest{Method: tgt.Method, URL: u, Header: tgt.Header, Body: tgt.Body}})
	if resp.Err != nil {
		res.Error = resp.Err.Error()
		return res
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	if a.sums != nil {
		resp.Header = a.sums.wholeBody(resp.Header, resp.Status, resp.Body)
	}
	// BytesIn/Out are the protojson's: the binary message's size on the
	// wire is not seen through the carrier.
	res.BytesIn, res.BytesOut = uint64(len(resp.Body)), uint64(len(tgt.Body))
	res.Body = resp.Body
	if a.maxBody >= 0 && int64(len(res.Body)) > a.maxBody {
		res.Body = res.Body[:a.maxBody:a.maxBody]
	}
	res.Code = uint16(resp.Status)
	if res.Code < 200 || res.Code >= 400 {
		res.Error = strconv.Itoa(resp.Status) + " " + codeName(resp.Header, resp.Status)
	}
	res.Headers = resp.Header
	return res
}

// codeName names the gRPC code of an answer the carrier recorded
// (Grpc-Status), e.g. ABORTED; the HTTP status text of status when there
// is none (an answering carrier's answer).
func codeName(h http.Header, status int) string {
	n, err := strconv.Atoi(h.Get("Grpc-Status"))
	if err != nil {
		return http.StatusText(status)
	}
	return apispec.GRPCCodeName(n)
}
