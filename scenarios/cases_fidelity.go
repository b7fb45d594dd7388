package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/target"
	"github.com/idemcheck/idemcheck/wire"
)

// FIDELITY: a replay is the original response, whatever its shape — what
// users of idempotency libraries report broken most: headers of a created
// resource dropped, repeated lines folded, 201 turned into 200, large
// bodies truncated, binary bodies re-encoded as text.
func init() {
	register(
		Case{Meta: Meta{ID: "fidelity/created-headers", Family: "fidelity", Requirements: []string{"IK-REPLAY-1", "IK-REPLAY-6"}, Level: Should,
			Requirement: "draft §2.6: for a retried request whose original completed, the resource SHOULD respond with the result of the previously completed operation: its status (201 stays 201), the created resource's Location and ETag, and the cookies it set, each Set-Cookie line kept (RFC 6265 §3: never folded into one).",
			Explanation: "A replay of a created resource keeps the status, Location and ETag, and every Set-Cookie line (each original cookie name on a line of its own; values may be fresh, cookies may be added)."},
			PerOperation: true, UsesOracle: true, Run: fidelityCreatedHeaders},
		Case{Meta: Meta{ID: "fidelity/large-body", Family: "fidelity", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6: the resource SHOULD respond with the result of the previously completed operation — all of it: a response of 1 MiB replays whole (compared per profile: bytes or JSON).",
			Explanation: "The large variant's response (at least 1 MiB) replays whole, not truncated at a store's column or value limit.",
			Needs:       []Need{NeedLarge}},
			PerOperation: true, UsesOracle: true, Run: fidelityLargeBody},
		Case{Meta: Meta{ID: "fidelity/binary-body", Family: "fidelity", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6: the resource SHOULD respond with the result of the previously completed operation: a binary (non-JSON) response replays byte-identical, not re-encoded as text.",
			Explanation: "The binary variant's response replays byte for byte (bytes that are not UTF-8 included).",
			Needs:       []Need{NeedBinary}},
			PerOperation: true, UsesOracle: true, Run: fidelityBinaryBody},
	)
}

func fidelityCreatedHeaders(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	replay := e.Send(ctx, Req{Label: "retry", Key: k})
	if v := e.lostConn(replay); v != nil {
		return *v
	}
	if v := e.notAReplay(ctx, k, first, replay); v != nil {
		return *v
	}
	var diffs, kept []string
	if replay.Status != first.Status {
		diffs = append(diffs, fmt.Sprintf("status %d, replay %d", first.Status, replay.Status))
	} else {
		kept = append(kept, fmt.Sprintf("status %d", first.Status))
	}
	for _, h := range []string{"Location", "ETag"} {
		want, got := first.Header.Values(h), replay.Header.Values(h)
		switch {
		case len(want) == 0:
		case !slices.Equal(want, got):
			diffs = append(diffs, fmt.Sprintf("%s: original %q, replay %q", h, want, got))
		default:
			kept = append(kept, h)
		}
	}
	if want := cookieNames(first.Header); len(want) > 0 {
		got := cookieNames(replay.Header)
		if lost := missingFrom(want, got); len(lost) > 0 {
			diffs = append(diffs, fmt.Sprintf("Set-Cookie: original %d lines %v, replay %d lines %v (lost: %v)", len(want), want, len(got), got, lost))
		} else {
			kept = append(kept, fmt.Sprintf("%d Set-Cookie lines", len(want)))
		}
	}
	if len(kept)+len(diffs) == 1 && first.Status != http.StatusCreated {
		return e.Skip(fmt.Sprintf("the original (%d) carries no Location, ETag or Set-Cookie: nothing beyond replay/same-status to check", first.Status))
	}
	if len(diffs) > 0 {
		return e.inTTL(e.Unmet("the original's status, Location, ETag and every Set-Cookie line", strings.Join(diffs, "; ")), first, replay)
	}
	return e.Pass("replay kept " + strings.Join(kept, ", "))
}

// cookieNames lists the cookie name of each Set-Cookie line of h, in
// order: a folded line shows as one name with the others lost.
func cookieNames(h http.Header) []string {
	var names []string
	for _, line := range h.Values("Set-Cookie") {
		name, _, _ := strings.Cut(line, "=")
		names = append(names, strings.TrimSpace(name))
	}
	return names
}

// missingFrom lists the names of want that got lacks, counting repeats:
// a replay may add cookies (a refreshed session), not lose one.
func missingFrom(want, got []string) []string {
	left := map[string]int{}
	for _, g := range got {
		left[g]++
	}
	var lost []string
	for _, w := range want {
		if left[w] == 0 {
			lost = append(lost, w)
			continue
		}
		left[w]--
	}
	return lost
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

func fidelityLargeBody(ctx context.Context, e *Env) Verdict {
	return e.variantReplay(ctx, target.VariantLarge, func(first wire.Resp) string {
		if len(first.Body) < target.LargeResponse {
			return fmt.Sprintf("the large variant answered %d bytes, want at least %d (1 MiB)", len(first.Body), target.LargeResponse)
		}
		return ""
	})
}

func fidelityBinaryBody(ctx context.Context, e *Env) Verdict {
	return e.variantReplay(ctx, target.VariantBinary, func(first wire.Resp) string {
		if len(first.Body) == 0 || isJSON(first.Body) {
			return "the binary variant answered an empty or JSON body, not a binary one: " + first.String()
		}
		return ""
	})
}

// variantReplay sends variant name under a fresh key, checks with shape
// that its answer is what the variant promises ("" when it is), retries
// it and judges the retry's body against the original's: bytes, or JSON
// equality where the profile compares JSON and both are JSON.
func (e *Env) variantReplay(ctx context.Context, name string, shape func(wire.Resp) string) Verdict {
	if e.Profile.ReplayCompare == target.CompareStatus {
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
	if !same && e.Profile.ReplayCompare == target.CompareJSON && isJSON(first.Body) && isJSON(retry.Body) {
		same = jsonEqual(first.Body, retry.Body)
	}
	// The status is replay/same-status's and fidelity/created-headers'
	// to judge; this case judges the body.
	if !retry.OK() || !same {
		return e.inTTL(e.Unmet("the original body, whole and byte-identical", observed+"; "+firstDifference(first.Body, retry.Body)), first, retry)
	}
	return e.Pass(observed + ", identical bodies")
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
