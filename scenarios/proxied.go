package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/chaos"
	"github.com/idemcheck/idemcheck/chaos/front"
	"github.com/idemcheck/idemcheck/wire"
)

// proxied is an Env whose requests go through a chaos proxy with rules
// (front.Start, for every carrier); the oracle is still read from the
// target directly.
type proxied struct {
	*Env
	outer *Env
	front *front.Front
	hist  *chaos.History
	buf   bytes.Buffer
}

func (e *Env) viaProxy(rules ...string) (*proxied, error) {
	pr := &proxied{outer: e}
	pr.hist = chaos.NewHistory(&pr.buf)
	// Without an id pointer the proxy still reads its default (/id), but
	// nothing here uses what it finds there (see upstreamID).
	f, err := front.Start(e.ctxOr(), e.Target, front.Options{History: pr.hist, IDPointer: e.Op.IDPointer, Timeout: e.timeout})
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
		if err := f.AddRule(r); err != nil {
			f.Close()
			return nil, err
		}
	}
	pr.front = f
	// The counter is shared: same keys, and its probes go to the target
	// directly, not through the proxy.
	pr.Env = &Env{Target: f.Target, Profile: e.Profile, Op: e.Op, Case: e.Case, carrier: f.Calls, timeout: e.timeout, double: e.double, oracle: e.oracle, events: e.events, keys: e.keys, ctx: e.ctx, setupVia: e}
	return pr, nil
}

// close stops the proxy and hands the evidence to the outer Env.
func (pr *proxied) close() {
	pr.front.Close()
	_ = pr.hist.Close()
	pr.outer.mu.Lock()
	pr.outer.exchanges = append(pr.outer.exchanges, pr.Exchanges()...)
	pr.outer.eventLines = append(pr.outer.eventLines, pr.eventEvidence()...)
	// The keys the double marked through the proxy: the outer Env's
	// downstream evidence lists their provider calls.
	for _, s := range pr.sentKeys() {
		if !slices.ContainsFunc(pr.outer.sent, func(o sentKey) bool { return o.key == s.key }) {
			pr.outer.sent = append(pr.outer.sent, s)
		}
	}
	pr.outer.mu.Unlock()
}

// upstream returns what the target answered, as the proxy saw it, to the
// attempts under key k.
func (pr *proxied) upstream(k string) []chaos.Upstream {
	_ = pr.hist.Flush()
	var out []chaos.Upstream
	for _, line := range bytes.Split(pr.buf.Bytes(), []byte("\n")) {
		var ev chaos.Event
		if json.Unmarshal(line, &ev) == nil && ev.Key == k {
			out = append(out, ev.Upstream...)
		}
	}
	return out
}

// upstreamSettled is upstream(k) once the proxy has recorded an attempt
// under k: the proxy writes an attempt's event after it dropped the
// client's connection, so the client can see the drop first. It waits at
// most 2 s.
func (pr *proxied) upstreamSettled(ctx context.Context, k string) []chaos.Upstream {
	deadline := time.Now().Add(2 * time.Second)
	for {
		up := pr.upstream(k)
		if len(up) > 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return up
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// upstreamID is the created id the proxy read from u, "" when the
// operation declares no id pointer: a member the user did not name as the
// created id (a request id, say) differs on every answer and proves nothing.
func (pr *proxied) upstreamID(u chaos.Upstream) string {
	if !hasMarks(pr.Op) || pr.Op.Updates() {
		return ""
	}
	return u.ID
}

// ids is the distinct created ids under k seen by the proxy and in rs.
func (pr *proxied) ids(k string, rs ...wire.Resp) []string {
	ids := pr.DistinctIDs(rs...)
	for _, u := range pr.upstream(k) {
		if id := pr.upstreamID(u); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// untilDone retries k with body until a final answer (not a transport
// error, 409, one of the profile's in-flight statuses, 429 or 5xx), honouring Retry-After (capped at 2s); at most
// 10 attempts. It returns every response, the last one final if any.
func (e *Env) untilDone(ctx context.Context, label, k string, body []byte) []wire.Resp {
	var rs []wire.Resp
	for i := 1; i <= 10 && ctx.Err() == nil; i++ {
		r := e.Send(ctx, Req{Label: fmt.Sprintf("%s %d", label, i), Key: k, Body: body})
		rs = append(rs, r)
		if r.Err == nil && r.Status != http.StatusConflict && !r.StatusIn(e.Profile.InFlightStatus) && r.Status != http.StatusTooManyRequests && r.Status < 500 {
			break
		}
		wait := 200 * time.Millisecond
		if r.Err == nil {
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = min(time.Duration(s)*time.Second, 2*time.Second)
			}
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	return rs
}

// judgeLost decides a lost-response case once the retries are done: one
// created id (the committed one), the client's last answer is it, and the
// effects count is one. A verdict against the server stands only when every
// retry was sent within TTL − margin of first (the original attempt): past
// it the key may legally have expired and executed afresh (see inTTL).
func (pr *proxied) judgeLost(ctx context.Context, k, committed string, first wire.Resp, rs []wire.Resp) Verdict {
	return pr.inTTL(pr.judgeLostRaw(ctx, k, committed, rs), first, rs...)
}

func (pr *proxied) judgeLostRaw(ctx context.Context, k, committed string, rs []wire.Resp) Verdict {
	e := pr.Env
	last := rs[len(rs)-1]
	if ids := pr.ids(k, rs...); len(ids) > 1 {
		return e.Fail("one created resource ("+committed+")", fmt.Sprintf("%d distinct ids: %s", len(ids), strings.Join(ids, ", ")))
	}
	if !last.OK() {
		return e.Unmet("the committed result "+committed, fmt.Sprintf("after %d retries: %s", len(rs), last.String()))
	}
	if id := e.CreatedID(last); committed != "" && id != "" && id != committed {
		return e.Fail("the committed id "+committed, "retry got "+id)
	}
	n, how, _, err := e.Effects(ctx, k, rs...)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if n != 1 {
		return e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s)", n, how))
	}
	return e.Pass(fmt.Sprintf("the original's answer lost; %d retries; got %s; 1 execution (%s)", len(rs), last.String(), how))
}

// committedID is the first 2xx the target gave (as the proxy saw it).
func (pr *proxied) committedID(up []chaos.Upstream) (string, bool) {
	for _, u := range up {
		if u.Error == "" && u.Status >= 200 && u.Status < 300 {
			return pr.upstreamID(u), true
		}
	}
	return "", false
}

// storm sends the slow original under a fresh key k and, once it is in
// flight (attempt 1 at the proxy, running upstream), stormRetries jittered
// same-key retries, and one more at each stormLate fraction of the slow
// duration. As duringSlow does, it tries again with a fresh key
// (the drop rule counts attempts per key) when the proxy did not drop the
// original or every retry was sent after it completed, at most
// overlapAttempts times: a stall then costs an attempt, not the verdict.
// The caller judges the last attempt.
func (pr *proxied) storm(ctx context.Context, body []byte) (k string, first wire.Resp, storm []wire.Resp) {
	_, v, _ := pr.Variant(apispec.VariantSlow)
	for attempt := 1; attempt <= overlapAttempts && ctx.Err() == nil; attempt++ {
		k = pr.NewKey()
		label := fmt.Sprintf("slow original (%s; the proxy drops the response)", v.Duration)
		if attempt > 1 {
			label += fmt.Sprintf(", attempt %d", attempt)
		}
		sent := time.Now()
		wait := pr.startInFlight(ctx, k, Req{Label: label, Key: k, Body: body}, v.Duration)
		running := time.Now()
		storm = make([]wire.Resp, stormRetries+len(stormLate))
		var wg sync.WaitGroup
		for i := range storm {
			// The burst goes at once; the late retries at fixed fractions
			// of the slow duration from the original's send: a claim that
			// lapses before the work ends (a lease shorter than the work)
			// is taken over by them, as a real client's later retries do.
			at := running.Add(time.Duration(i) * 20 * time.Millisecond)
			label := fmt.Sprintf("storm retry %d", i+1)
			if i >= stormRetries {
				f := stormLate[i-stormRetries]
				at = sent.Add(time.Duration(f * float64(v.Duration)))
				label = fmt.Sprintf("late storm retry %d (at %d%% of the slow %s)", i+1, int(f*100), v.Duration)
			}
			wg.Go(func() {
				select {
				case <-time.After(time.Until(at)):
				case <-ctx.Done():
				}
				storm[i] = pr.Send(ctx, Req{Label: label, Key: k, Body: body})
			})
		}
		wg.Wait()
		first = wait()
		if pr.answerLost(first) && stormOverlapped(first, storm) {
			break
		}
	}
	return k, first, storm
}

// stormRetries is how many same-key retries overlap the slow original
// at once, 20ms apart.
const stormRetries = 3

// stormLate are the fractions of the slow duration, from the original's
// send, at which one more same-key retry each goes: still in flight on a
// correct server (its answer is the in-flight one or the replay), past a
// lapsed claim on a server whose lease is shorter than the work.
var stormLate = []float64{0.75, 0.9}

// stormOverlapped reports whether a storm retry was sent before the
// original's (dropped) answer came back.
func stormOverlapped(first wire.Resp, storm []wire.Resp) bool {
	return slices.ContainsFunc(storm, func(r wire.Resp) bool { return r.Start.Before(first.End) })
}

// answerLost reports whether the proxy kept r's answer from the client,
// whatever the carrier: it cut the connection (a transport error: HTTP),
// or ended the call as a lost connection does, UNAVAILABLE (503), labelled
// with the fault (drop-response, hangup: gRPC, whose proxy answers each call).
func (pr *proxied) answerLost(r wire.Resp) bool {
	if r.Err != nil {
		return true
	}
	f := r.Header.Get(chaos.FaultHeader)
	return r.Status == http.StatusServiceUnavailable && (f == "drop-response" || f == "hangup")
}
