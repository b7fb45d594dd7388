package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// FIDELITY: a replay is the original response, whatever its shape — what
// users of idempotency libraries report broken most: headers of a created
// resource dropped, repeated lines folded, 201 turned into 200, large
// bodies truncated, binary bodies re-encoded as text.
func init() {
	register(
		Case{Meta: Meta{ID: "fidelity/created-headers", Family: "fidelity", Requirements: []string{"IK-REPLAY-1", "IK-REPLAY-6"}, Level: Should,
			Requirement: "draft §2.6: for a retried request whose original completed, the resource SHOULD respond with the result of the previously completed operation: its status (201 stays 201), the created resource's Location and ETag; a cookie it repeats keeps its Set-Cookie line whole (RFC 6265 §3: never folded into one, never split at a comma).",
			Explanation: "A replay of a created resource keeps the status, Location and ETag; every Set-Cookie line a replay carries is whole: not two cookies folded into one line, not a cookie split at its Expires comma (a replay may leave the cookies out, as replay/no-credentials recommends, refresh them or add some)."},
			PerOperation: true, UsesOracle: true, Unfit: needs[wire.HeaderFields]("Location and the created resource's header fields are HTTP's"), Run: fidelityCreatedHeaders},
		Case{Meta: Meta{ID: "fidelity/large-body", Family: "fidelity", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6: the resource SHOULD respond with the result of the previously completed operation — all of it: a response of 1 MiB replays whole (compared per profile: bytes or JSON).",
			Explanation: "The large variant's response (at least 1 MiB) replays whole, not truncated at a store's column or value limit.",
			Needs:       []Need{NeedLarge}},
			PerOperation: true, UsesOracle: true, Run: fidelityLargeBody},
		Case{Meta: Meta{ID: "fidelity/binary-body", Family: "fidelity", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6: the resource SHOULD respond with the result of the previously completed operation: a binary (non-JSON) response replays byte-identical, not re-encoded as text.",
			Explanation: "The binary variant's response replays byte for byte (bytes that are not UTF-8 included).",
			Needs:       []Need{NeedBinary}},
			PerOperation: true, UsesOracle: true, Unfit: needs[wire.RawBodies]("the answer is a message or a JSON document (gRPC, GraphQL, JSON-RPC): there is no non-JSON body to keep"), Run: fidelityBinaryBody},
		Case{Meta: Meta{ID: "fidelity/content-coding", Family: "fidelity", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6 with RFC 9110 §12.5.3: the replay is the result of the completed operation in a content coding the retry accepts: a retry that accepts only identity never gets the gzip body stored for an original that accepted gzip.",
			Explanation: "The original sent with Accept-Encoding: gzip, its retry with identity, and the other way round: each answer comes in a coding its request accepted (no Content-Encoding it did not ask for) and the retry's decodes to the original's (compared per profile)."},
			PerOperation: true, UsesOracle: true, Unfit: needs[wire.ContentCoding]("the carrier negotiates no content coding of its own answers (GraphQL, JSON-RPC) or compresses below the handler (gRPC compresses each message below the handler (grpc-encoding, chosen for each call from that call's grpc-accept-encoding): a service stores and replays the message, re-compressed for the retry's own call, and replay/same-body compares it decompressed)"), Run: fidelityContentCoding},
	)
}

// codingOrders are fidelity/content-coding's pairs: what the original,
// then its retry, accept.
var codingOrders = [][2]string{{"gzip", "identity"}, {"identity", "gzip"}}

func fidelityContentCoding(ctx context.Context, e *Env) Verdict {
	var seen, problems []string
	coded := false
	for _, order := range codingOrders {
		k := e.NewKey()
		accept := func(c string) map[string]string { return map[string]string{"Accept-Encoding": c} }
		first := e.Send(ctx, Req{Label: "original, Accept-Encoding: " + order[0], Key: k, Headers: accept(order[0])})
		if v := e.lostConn(first); v != nil {
			return *v
		}
		if !first.OK() {
			return e.Inconclusive("the normal call did not succeed, nothing to replay: " + first.String())
		}
		retry := e.Send(ctx, Req{Label: "retry, Accept-Encoding: " + order[1], Key: k, Headers: accept(order[1])})
		if v := e.lostConn(retry); v != nil {
			return *v
		}
		if v := e.notAReplay(ctx, k, first, retry); v != nil {
			return *v
		}
		fb, fc, fp := decodedFor(first, order[0])
		rb, rc, rp := decodedFor(retry, order[1])
		coded = coded || fc != "identity" || rc != "identity"
		seen = append(seen, fmt.Sprintf("original accepting %s answered %s, retry accepting %s answered %s", order[0], fc, order[1], rc))
		for _, p := range [][3]string{{"original", order[0], fp}, {"retry", order[1], rp}} {
			if p[2] != "" {
				problems = append(problems, fmt.Sprintf("%s accepting %s: %s", p[0], p[1], p[2]))
			}
		}
		if fp == "" && rp == "" {
			// Bodies only: the status is replay/same-status's concern.
			f, r := first, retry
			f.Body, r.Body, r.Status = fb, rb, first.Status
			if same, diff := e.SameResponse(f, r); !same {
				problems = append(problems, fmt.Sprintf("retry accepting %s does not decode to the original: %s", order[1], diff))
			}
		}
	}
	observed := strings.Join(seen, "; ")
	if !coded {
		observed += " (the server coded no answer: nothing to replay in the wrong coding)"
	}
	if len(problems) > 0 {
		return e.Unmet("each answer in a coding its request accepted, the retry decoding to the original", strings.Join(problems, "; ")+" ("+observed+")")
	}
	return e.Pass(observed)
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
	if want := first.Header.Values("Set-Cookie"); len(want) > 0 {
		got := replay.Header.Values("Set-Cookie")
		if broken := brokenCookieLines(want, got); len(broken) > 0 {
			diffs = append(diffs, fmt.Sprintf("Set-Cookie: original %d lines %q, replay %d lines %q (%s)", len(want), want, len(got), got, strings.Join(broken, "; ")))
		} else if len(got) > 0 {
			kept = append(kept, fmt.Sprintf("%d whole Set-Cookie lines", len(got)))
		}
	}
	if len(kept)+len(diffs) == 1 && first.Status != http.StatusCreated {
		return e.Skip(fmt.Sprintf("the original (%d) carries no Location, ETag or Set-Cookie: nothing beyond replay/same-status to check", first.Status))
	}
	if len(diffs) > 0 {
		return e.inTTL(e.Unmet("the original's status, Location and ETag, and every Set-Cookie line the replay carries whole", strings.Join(diffs, "; ")), first, replay)
	}
	return e.Pass("replay kept " + strings.Join(kept, ", "))
}

// brokenCookieLines says which Set-Cookie lines of a replay (got) are
// not whole lines of the original (want): two or more of its cookies
// folded into one line, or a piece of one of its lines (split at the
// comma of an Expires date). Other lines are fresh or added cookies.
func brokenCookieLines(want, got []string) []string {
	var broken []string
	for _, g := range got {
		if slices.Contains(want, g) {
			continue
		}
		var in []string
		for _, w := range want {
			if id := credentialID("Set-Cookie", w); strings.Contains(g, id) {
				in = append(in, id)
			}
		}
		switch {
		case len(in) > 1:
			broken = append(broken, fmt.Sprintf("%q folds %d cookies into one line", g, len(in)))
		case slices.ContainsFunc(want, func(w string) bool { return strings.Contains(w, strings.TrimSpace(g)) }):
			broken = append(broken, fmt.Sprintf("%q is a piece of an original line, split at a comma", g))
		}
	}
	return broken
}

func fidelityLargeBody(ctx context.Context, e *Env) Verdict {
	if e.Profile.LargeReplay == apispec.LargeTombstone {
		return e.largeTombstone(ctx)
	}
	return e.variantReplay(ctx, apispec.VariantLarge, func(first wire.Resp) string {
		if len(first.Body) < apispec.LargeResponse {
			return fmt.Sprintf("the large variant answered %d bytes, want at least %d (1 MiB)", len(first.Body), apispec.LargeResponse)
		}
		return ""
	})
}

func fidelityBinaryBody(ctx context.Context, e *Env) Verdict {
	return e.variantReplay(ctx, apispec.VariantBinary, func(first wire.Resp) string {
		if len(first.Body) == 0 || isJSON(first.Body) {
			return "the binary variant answered an empty or JSON body, not a binary one: " + first.String()
		}
		return ""
	})
}

// largeTombstone judges fidelity/large-body where the profile lets a
// response too large to store be kept as a tombstone: the retry may get
// 413 instead of the body, never a second execution (only an oracle can
// count those). A whole replay is as good.
func (e *Env) largeTombstone(ctx context.Context) Verdict {
	body, _, _ := e.Variant(apispec.VariantLarge)
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original (large)", Key: k, Body: body})
	if !first.OK() || len(first.Body) < apispec.LargeResponse {
		return e.Inconclusive(fmt.Sprintf("the large variant did not answer a 2xx of at least %d bytes: %s", apispec.LargeResponse, first.String()))
	}
	retry := e.Send(ctx, Req{Label: "retry (large)", Key: k, Body: body})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	observed := fmt.Sprintf("original %d, %d bytes; retry %s", first.Status, len(first.Body), retry.String())
	if retry.OK() && bytes.Equal(first.Body, retry.Body) {
		if v := e.notAReplay(ctx, k, first, retry); v != nil {
			return *v
		}
		return e.Pass(observed + ", replayed whole")
	}
	if retry.Status != http.StatusRequestEntityTooLarge {
		return e.inTTL(e.Unmet("the original body whole, or a 413 tombstone (profile large_replay: tombstone)", observed), first, retry)
	}
	if !e.HasOracle() {
		return e.Unverifiable("a 413 tombstone carries no id: only an oracle can tell it did not execute again (" + observed + ")")
	}
	n, err := e.Executions(ctx, k)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if n != 1 {
		return e.inTTL(e.Fail("exactly 1 execution", fmt.Sprintf("%s; %d executions (oracle)", observed, n)), first, retry)
	}
	return e.Pass(observed + ": the tombstone the profile allows, 1 execution (oracle)")
}
