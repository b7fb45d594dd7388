package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// original sends the normal call under key; ok is false (with the verdict
// to return) when it did not succeed, since nothing can be replayed then.
func (e *Env) original(ctx context.Context, key string, body []byte) (wire.Resp, *Verdict) {
	r := e.Send(ctx, Req{Label: "original", Key: key, Body: body})
	if !r.OK() {
		v := e.Inconclusive("the normal call did not succeed, nothing to replay: " + r.String())
		return r, &v
	}
	return r, nil
}

// originalAndRetry stores the normal request under a fresh key and sends
// it once more unchanged: the opening of every replay-fidelity case.
func (e *Env) originalAndRetry(ctx context.Context) (first, replay wire.Resp, bad *Verdict) {
	k := e.NewKey()
	if first, bad = e.original(ctx, k, nil); bad != nil {
		return first, replay, bad
	}
	replay = e.Send(ctx, Req{Label: "retry", Key: k})
	return first, replay, e.lostConn(replay)
}

// judgeSamePayload judges a retry whose payload the profile may consider
// equal to the original: a replay is expected when expect is Yes; an error
// is acceptable otherwise; a new execution is never acceptable.
func (e *Env) judgeSamePayload(ctx context.Context, k string, first, retry wire.Resp, expect apispec.Tri, field string) Verdict {
	replayed, err := e.Replayed(ctx, first, retry, k)
	if err != nil {
		return e.undecided(err, retry.String())
	}
	if retry.OK() && !replayed {
		return e.inTTL(e.Fail("a replay or an idempotency error, never a second execution", "new execution: "+retry.String()), first, retry)
	}
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			return e.Inconclusive(err.Error())
		}
		if n != 1 {
			return e.inTTL(e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (oracle)", n)), first, retry)
		}
	}
	observed := "replayed"
	if !retry.OK() {
		observed = "answered " + retry.String()
	}
	switch expect {
	case apispec.Unknown:
		return e.Finding(field, observed)
	case apispec.No:
		return e.Pass(observed)
	}
	if !retry.OK() {
		return e.inTTL(e.Unmet("a replay of the original", observed), first, retry)
	}
	return e.Pass(observed)
}

// notAReplay is an Inconclusive verdict when the retry under k is shown
// to have executed again: a re-execution is replay/single-execution's to
// judge, and its fresh answer says nothing about the replay's fidelity.
// The oracle decides where there is one; else created ids, when both
// bodies carry one (a truncated or binary body may carry none). Without
// either the answer is judged as the replay it should be.
func (e *Env) notAReplay(ctx context.Context, k string, first, retry wire.Resp) *Verdict {
	if !retry.OK() {
		return nil // judged as it is: an error where the replay belongs
	}
	again := false
	if e.HasOracle() {
		n, err := e.Executions(ctx, k)
		if err != nil {
			v := e.Inconclusive(err.Error())
			return &v
		}
		again = n > 1
	} else if a, b := e.CreatedID(first), e.CreatedID(retry); a != "" && b != "" {
		again = a != b
	}
	if again {
		v := e.Inconclusive(fmt.Sprintf("the retry executed again instead of replaying (see replay/single-execution): %d, %d bytes", retry.Status, len(retry.Body)))
		if !e.WithinTTL(first, retry) || e.outlivedLease(first) {
			// A stall may have let the record go (its TTL, or the
			// original's lease, ran out): another attempt may see the
			// replay whose fidelity this case judges.
			v = e.Missed(fmt.Sprintf("%s; the original took %s and the retry was answered %s after it started: a stall past the declared TTL %s or lease %s (− margin %s) may have let the record go",
				v.Reason, first.End.Sub(first.Start).Round(time.Millisecond), retry.End.Sub(first.Start).Round(time.Millisecond), e.Target.TTL, e.Target.Lease, e.Profile.Margin))
		}
		return &v
	}
	return nil
}

// variantReplay sends variant name under a fresh key, checks with shape
// that its answer is what the variant promises ("" when it is), retries
// it and judges the retry's body against the original's: bytes, or JSON
// equality where the profile compares JSON and both are JSON.
func (e *Env) variantReplay(ctx context.Context, name string, shape func(wire.Resp) string) Verdict {
	if e.Profile.ReplayCompare == apispec.CompareStatus {
		return e.Skip("profile replay_compare is status: bodies are not compared")
	}
	body, _, _ := e.Variant(name)
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original (" + name + ")", Key: k, Body: body})
	if !first.OK() {
		return e.Inconclusive(fmt.Sprintf("the %s variant did not succeed, nothing to replay: %s", name, first.String()))
	}
	if why := shape(first); why != "" {
		return e.Inconclusive(why)
	}
	retry := e.Send(ctx, Req{Label: "retry (" + name + ")", Key: k, Body: body})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	if v := e.notAReplay(ctx, k, first, retry); v != nil {
		return *v
	}
	observed := fmt.Sprintf("original %d, %d bytes; retry %d, %d bytes", first.Status, len(first.Body), retry.Status, len(retry.Body))
	same := bytes.Equal(first.Body, retry.Body)
	if !same && e.Profile.ReplayCompare == apispec.CompareJSON && isJSON(first.Body) && isJSON(retry.Body) {
		same = jsonEqual(first.Body, retry.Body)
	}
	// The status is replay/same-status's and fidelity/created-headers'
	// to judge; this case judges the body.
	if !retry.OK() || !same {
		return e.inTTL(e.Unmet("the original body, whole and byte-identical", observed+"; "+firstDifference(first.Body, retry.Body)), first, retry)
	}
	return e.Pass(observed + ", identical bodies")
}

// location returns the path of r's Location header on the target, or "".
func (e *Env) location(r wire.Resp) string {
	loc := r.Header.Get("Location")
	if loc == "" {
		return ""
	}
	base, err := url.Parse(e.Target.BaseURL + "/")
	if err != nil {
		return ""
	}
	u, err := base.Parse(loc)
	if err != nil || u.Host != base.Host {
		return ""
	}
	return u.RequestURI()
}

// isJSON reports whether b is one JSON value.
func isJSON(b []byte) bool {
	_, err := jsonx.Decode(b)
	return err == nil
}

// firstDifference says where two bodies first differ.
func firstDifference(a, b []byte) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at byte %d (original %#02x, replay %#02x)", i, a[i], b[i])
		}
	}
	if len(b) < len(a) {
		return fmt.Sprintf("the replay is cut after %d of %d bytes", len(b), len(a))
	}
	return fmt.Sprintf("the replay has %d bytes beyond the original's %d", len(b)-len(a), len(a))
}
