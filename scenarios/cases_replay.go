package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// REPLAY: a completed request retried with the same key and payload gets
// the original result and causes no new effect (draft §2.6).
func init() {
	register(
		Case{Meta: Meta{ID: "replay/same-status", Family: "replay", Requirements: []string{"IK-REPLAY-1"}, Level: Should,
			Requirement: "draft §2.6: for a retried request whose original completed, the resource SHOULD respond with the result of the previously completed operation.",
			Explanation: "A retry after completion gets the same status code as the original (201 stays 201)."},
			PerOperation: true, Run: replaySameStatus},
		Case{Meta: Meta{ID: "replay/same-body", Family: "replay", Requirements: []string{"IK-REPLAY-2"}, Level: Should,
			Requirement: "draft §2.6: the resource SHOULD respond with the result of the previously completed operation (compared per profile: bytes, JSON or status).",
			Explanation: "The replayed body equals the original body under the profile's comparison mode."},
			PerOperation: true, Skips: skipStatusCompare, Run: replaySameBody},
		Case{Meta: Meta{ID: "replay/single-execution", Family: "replay", Requirements: []string{"IK-REPLAY-3"}, Level: Must,
			Requirement: "Idempotency (core of every source): any number of retries with the same key and payload has the effect of one request.",
			Explanation: "Three sequential retries of a completed request, sent after another key's request completed, cause exactly one execution and one created resource (the key's own).",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Run: replaySingleExecution},
		Case{Meta: Meta{ID: "replay/key-field-spelling", Family: "replay", Requirements: []string{"IK-REPLAY-3"}, Level: Must,
			Requirement: "RFC 9110 §5.1: field names are case-insensitive, so idempotency-key and IDEMPOTENCY-KEY are the key field; any number of retries with the same key has the effect of one request.",
			Explanation: "The original sends the key field as idempotency-key (as every HTTP/2 client and many gateways do), its retry as IDEMPOTENCY-KEY, spelled so on the wire over HTTP/1.1: one execution, the retry replayed.",
			Needs:       []Need{NeedEffects}},
			PerOperation: true, Unfit: needs[wire.HeaderKeys]("a key field has one name, and metadata keys are lower case on the wire (HTTP/2): there is no other spelling to send"), Run: replayKeyFieldSpelling},
		Case{Meta: Meta{ID: "replay/marker-header", Family: "replay", Requirements: []string{"IK-REPLAY-4"}, Level: Should,
			Requirement: "Profile: replays carry the profile's replay marker (Stripe: Idempotent-Replayed: true) and the first response does not; the IETF draft defines none (issue #46).",
			Explanation: "The replay marker, where the profile defines one, tells a replay from a first execution."},
			PerOperation: true, Run: replayMarkerHeader},
		Case{Meta: Meta{ID: "replay/business-error", Family: "replay", Requirements: []string{"IK-REPLAY-5", "IK-ERRORS-2"}, Level: Should,
			Requirement: "draft §2.6: respond with the result of the previously completed operation, \"success or an error\"; a business 4xx (e.g. 402 declined) is a completed outcome.",
			Explanation: "A request that completed with a business error replays that error and does not execute again.",
			Needs:       []Need{NeedBusinessError, NeedEffects}},
			PerOperation: true, Run: replayBusinessError},
		Case{Meta: Meta{ID: "replay/same-headers", Family: "replay", Requirements: []string{"IK-REPLAY-6"}, Level: Should,
			Requirement: "draft §2.6: the result of the previously completed operation includes its representation headers (Content-Type, Location, ETag...); Date, request ids, rate-limit and Set-Cookie may differ.",
			Explanation: "A replay carries the original's representation headers with the same values (and the header fields profile replay_metadata names; over gRPC those metadata, headers or trailers, only)."},
			PerOperation: true, Skips: skipNoReplayMetadata, Run: replaySameHeaders},
		Case{Meta: Meta{ID: "replay/canonical-json", Family: "replay", Requirements: []string{"IK-REPLAY-7"}, Level: Should,
			Requirement: "draft §2.4 (MAY fingerprint) and profile canonical_json: a semantically equal JSON body (member order, whitespace) is the same payload.",
			Explanation: "The same key with the same JSON document spelled differently replays rather than mismatching, and never executes again."},
			PerOperation: true, UsesOracle: true, Unfit: needs[wire.RawBodies]("the request travels re-encoded (binary protobuf; a GraphQL or JSON-RPC envelope): JSON member order and whitespace never reach the server as built"), Run: replayCanonicalJSON},
		Case{Meta: Meta{ID: "replay/volatile-fields", Family: "replay", Requirements: []string{"IK-REPLAY-8"}, Level: Should,
			Requirement: "Profile volatile_fields (seeds: fingerprint excludes volatile fields): a body differing only in those fields is the same payload.",
			Explanation: "Changing only a configured volatile field under the same key replays the original."},
			PerOperation: true, UsesOracle: true, Skips: skipNoVolatileFields, Run: replayVolatileFields},
		Case{Meta: Meta{ID: "replay/no-credentials", Family: "replay", Requirements: []string{"IK-REPLAY-9"}, Level: Should,
			Requirement: "draft §2.6 replays \"the result of the previously completed operation\", not the first client's session: a replay carries none of the credential fields the original set (Set-Cookie, WWW-Authenticate, Authentication-Info), unless the profile allows them (replay_credentials).",
			Explanation: "The original sets a per-execution cookie or challenge; its replay does not hand it out again (granit-fx/granit-dotnet PR #1151). Lines every answer carries (a load balancer's cookie) are told apart by a fresh execution's answer."},
			PerOperation: true, UsesOracle: true, Skips: skipCredentialsAllowed, Unfit: needs[wire.HeaderFields]("Set-Cookie and HTTP authentication challenges are HTTP fields: a gRPC answer sets no cookie"), Run: replayNoCredentials},
	)
}

func replaySameStatus(ctx context.Context, e *Env) Verdict {
	first, replay, bad := e.originalAndRetry(ctx)
	if bad != nil {
		return *bad
	}
	if !replay.SameStatus(first) {
		return e.inTTL(e.Unmet("status "+first.StatusText()+" again", replay.String()), first, replay)
	}
	return e.Pass(first.StatusText() + " then " + replay.StatusText())
}

func skipStatusCompare(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.ReplayCompare == apispec.CompareStatus {
		return "profile replay_compare is status: bodies are not compared"
	}
	return ""
}

func replaySameBody(ctx context.Context, e *Env) Verdict {
	first, replay, bad := e.originalAndRetry(ctx)
	if bad != nil {
		return *bad
	}
	if same, diff := e.SameResponse(first, replay); !same {
		return e.inTTL(e.Unmet("the original response ("+e.Profile.ReplayCompare+" comparison)", diff), first, replay)
	}
	return e.Pass("replay equals the original (" + e.Profile.ReplayCompare + ")")
}

func replaySingleExecution(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	rs := []wire.Resp{first}
	// Another key's request completes first: the retries must get this
	// key's outcome, not the last one stored (a reply cache, or a lookup
	// that lost its key condition). A global counter would count it
	// against this key: left out there.
	if e.oracle == nil || !e.oracle.global {
		e.Send(ctx, Req{Label: "another key's request", Key: e.NewKey()})
	}
	for i := 1; i <= 3; i++ {
		rs = append(rs, e.Send(ctx, Req{Label: fmt.Sprintf("retry %d", i), Key: k}))
	}
	if ids := e.DistinctIDs(rs...); len(ids) > 1 {
		return e.inTTL(e.Fail("one created resource", fmt.Sprintf("%d distinct ids: %s", len(ids), strings.Join(ids, ", "))), first, rs[1:]...)
	}
	n, how, _, err := e.Effects(ctx, k, rs...)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if n != 1 {
		return e.inTTL(e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s)", n, how)), first, rs[1:]...)
	}
	return e.Pass(fmt.Sprintf("1 execution over 4 requests (%s)", how))
}

func replayKeyFieldSpelling(ctx context.Context, e *Env) Verdict {
	lower, upper := strings.ToLower(e.Target.KeyHeader), strings.ToUpper(e.Target.KeyHeader)
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original, key field spelled " + lower, Key: k, KeyName: lower})
	if v := e.lostConn(first); v != nil {
		return *v
	}
	exact := fmt.Sprintf("the key field is read by its exact spelling (field names are case-insensitive, RFC 9110 §5.1: to fix, look %s up case-insensitively, as your framework's header accessor does)", e.Target.KeyHeader)
	if !first.OK() {
		// Refused: the key may be unseen under this spelling, or the
		// normal call may fail whatever the spelling.
		control := e.Send(ctx, Req{Label: "control, key field spelled " + http.CanonicalHeaderKey(e.Target.KeyHeader), Key: e.NewKey()})
		if control.OK() {
			return e.Fail("the key honoured under any spelling of its field name", fmt.Sprintf("%s: %s, while %s: %s; %s",
				lower, first.String(), http.CanonicalHeaderKey(e.Target.KeyHeader), control.String(), exact))
		}
		return e.Inconclusive("the normal call did not succeed under any spelling of the key field: " + first.String())
	}
	retry := e.Send(ctx, Req{Label: "retry, key field spelled " + upper, Key: k, KeyName: upper})
	if v := e.lostConn(retry); v != nil {
		return *v
	}
	over := ""
	if retry.Proto != "" && !strings.HasPrefix(retry.Proto, "HTTP/1") {
		over = " (over " + retry.Proto + " both went lower case, as the protocol requires)"
	}
	observed := fmt.Sprintf("%s: %s; %s: %s%s", lower, first.String(), upper, retry.String(), over)
	if ids := e.DistinctIDs(first, retry); len(ids) > 1 {
		return e.inTTL(e.Fail("one created resource", fmt.Sprintf("%d distinct ids (%s): %s; %s", len(ids), strings.Join(ids, ", "), observed, exact)), first, retry)
	}
	n, how, _, err := e.Effects(ctx, k, first, retry)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if n != 1 {
		return e.inTTL(e.Fail("exactly 1 execution", fmt.Sprintf("%d executions (%s): %s; %s", n, how, observed, exact)), first, retry)
	}
	if !retry.OK() {
		// Refused, not replayed: by the spelling, when the canonical one
		// replays.
		control := e.Send(ctx, Req{Label: "control retry, key field spelled " + http.CanonicalHeaderKey(e.Target.KeyHeader), Key: k})
		if control.OK() {
			return e.inTTL(e.Fail("the retry replayed under any spelling of the key field", fmt.Sprintf("%s; %s: %s; %s",
				observed, http.CanonicalHeaderKey(e.Target.KeyHeader), control.String(), exact)), first, retry)
		}
		return e.Inconclusive("the retry was refused under the canonical spelling too, so the spelling is not what decides: " + observed + "; " + control.String())
	}
	return e.Pass(fmt.Sprintf("1 execution over 2 requests (%s): %s", how, observed))
}

func replayMarkerHeader(ctx context.Context, e *Env) Verdict {
	first, replay, bad := e.originalAndRetry(ctx)
	if bad != nil {
		return *bad
	}
	name, want := e.Profile.ReplayHeader, e.Profile.ReplayHeaderValue
	if name == "" {
		seen := fmt.Sprintf("first response markers %v, replay markers %v", markers(first.Header), markers(replay.Header))
		for _, m := range knownReplayMarkers {
			if strings.EqualFold(first.Header.Get(m), "true") {
				return e.Finding("replay_header", "a first execution claims to be a replay: "+seen)
			}
		}
		return e.Finding("replay_header", seen)
	}
	got := replay.Header.Get(name)
	if got == "" || (want != "" && got != want) {
		return e.inTTL(e.Unmet(fmt.Sprintf("replay carries %s: %s", name, want), fmt.Sprintf("%s: %q", name, got)), first, replay)
	}
	if v := first.Header.Get(name); v != "" && (want == "" || v == want) {
		return e.Unmet(fmt.Sprintf("first response without %s (or not %q)", name, want), fmt.Sprintf("first response %s: %q", name, v))
	}
	return e.Pass(fmt.Sprintf("replay %s: %s; first response without it", name, got))
}

func replayBusinessError(ctx context.Context, e *Env) Verdict {
	if e.declinesUnseen() {
		return e.declinesUnseenVerdict()
	}
	body, v, _ := e.Variant(apispec.VariantBusinessError)
	k := e.NewKey()
	first := e.Send(ctx, Req{Label: "original (business error)", Key: k, Body: body})
	if !first.Is4xx() || (v.Status != 0 && !first.HasStatus(v.Status)) {
		return e.Inconclusive("the business_error variant did not produce its 4xx: " + first.String())
	}
	retry := e.Send(ctx, Req{Label: "retry", Key: k, Body: body})
	if e.Profile.Cache4xxBusiness == apispec.Yes && retry.SameStatus(first) {
		// Compared whatever counts: a stored error rebuilt on replay (a
		// new trace id, its detail dropped) is no replay of the result.
		if same, diff := e.SameResponse(first, retry); !same {
			return e.inTTL(e.Unmet("the original error response", diff), first, retry)
		}
	}
	n, how, _, err := e.Effects(ctx, k, first, retry)
	if err != nil {
		return e.Inconclusive(err.Error())
	}
	if how != "oracle" {
		// Created ids do not exist for an error outcome: only the oracle can
		// tell a cached error from a re-executed one.
		return e.Unverifiable("a business error creates no resource; only an oracle can count its executions")
	}
	observed := fmt.Sprintf("%s then %s, %d executions", first.StatusText(), retry.String(), n)
	if v := e.lostConn(retry); v != nil && n < 2 {
		return *v
	}
	switch e.Profile.Cache4xxBusiness {
	case apispec.Unknown:
		return e.Finding("cache_4xx_business", observed)
	case apispec.No:
		if n < 2 {
			return e.Unmet("the retry executes again (profile: business errors not cached)", observed)
		}
		return e.Pass(observed)
	}
	if n != 1 {
		return e.inTTL(e.Unmet("the error replayed with no new execution", observed), first, retry)
	}
	if same, diff := e.SameResponse(first, retry); !same {
		return e.inTTL(e.Unmet("the original error response", diff), first, retry)
	}
	return e.Pass(observed)
}

func replaySameHeaders(ctx context.Context, e *Env) Verdict {
	first, replay, bad := e.originalAndRetry(ctx)
	if bad != nil {
		return *bad
	}
	if !replay.SameStatus(first) {
		return e.Inconclusive(fmt.Sprintf("the retry was not a replay (status %s, then %s); see replay/same-status", first.StatusText(), replay.String()))
	}
	names, what := append(slices.Clone(replayedHeaders), e.Profile.ReplayMetadata...), "the original's representation headers"
	if !has[wire.HeaderFields](e.carrier) {
		// A gRPC answer has no representation headers: only the metadata
		// the profile names (skipNoReplayMetadata).
		names, what = e.Profile.ReplayMetadata, "the original's metadata "+strings.Join(e.Profile.ReplayMetadata, ", ")
		var seen []string
		for _, n := range names {
			if vs := first.Header.Values(n); len(vs) > 0 {
				seen = append(seen, fmt.Sprintf("%s: %q", strings.ToLower(n), strings.Join(vs, ", ")))
			}
		}
		if len(seen) == 0 {
			return e.Inconclusive(fmt.Sprintf("the original answer carried none of the metadata replay_metadata names (%s): nothing to compare", strings.Join(names, ", ")))
		}
		if d := HeaderDiff(first, replay, names); len(d) > 0 {
			return e.inTTL(e.Unmet(what, strings.Join(d, "; ")), first, replay)
		}
		return e.Pass("replayed " + strings.Join(seen, "; "))
	}
	if d := HeaderDiff(first, replay, names); len(d) > 0 {
		return e.inTTL(e.Unmet(what, strings.Join(d, "; ")), first, replay)
	}
	return e.Pass()
}

// skipNoReplayMetadata: an answer without HTTP header fields (a gRPC
// one: no wire.HeaderFields) has no representation headers, and no gRPC
// document names metadata a replay repeats: only the profile's
// replay_metadata are compared.
func skipNoReplayMetadata(t *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if c := carrierOf(t); !has[wire.HeaderFields](c) && len(p.ReplayMetadata) == 0 {
		return "a " + c.Name() + " answer has no representation headers, and profile replay_metadata names no response metadata to compare"
	}
	return ""
}

func replayCanonicalJSON(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	alt, err := reorderedJSON(e.Body())
	if err != nil {
		return e.Skip("the operation body is not a JSON object")
	}
	retry := e.Send(ctx, Req{Label: "retry (same JSON, other spelling)", Key: k, Body: alt})
	return e.judgeSamePayload(ctx, k, first, retry, e.Profile.CanonicalJSON, "canonical_json")
}

func skipNoVolatileFields(_ *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if len(p.VolatileFields) == 0 {
		return "profile volatile_fields is empty"
	}
	return ""
}

func replayVolatileFields(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	var patches []json.RawMessage
	for _, f := range e.Profile.VolatileFields {
		p, err := patchAt(f, e.volatileValue(f))
		if err != nil {
			return e.Skip(err.Error())
		}
		patches = append(patches, p)
	}
	retry := e.Send(ctx, Req{Label: "retry (volatile fields changed)", Key: k, Body: e.Body(patches...)})
	if retry.Err != nil && !has[wire.RawBodies](e.carrier) && strings.Contains(retry.Err.Error(), "in protojson") {
		return e.Inconclusive("the changed volatile fields do not fit the request message (give each a value in the operation's body, so its type is known): " + retry.Err.Error())
	}
	return e.judgeSamePayload(ctx, k, first, retry, apispec.Yes, "volatile_fields")
}

func skipCredentialsAllowed(t *apispec.Target, p *apispec.Profile, _ *apispec.Operation) string {
	if p.ReplayCredentials == apispec.Yes {
		return "profile replay_credentials is true: a replay may repeat the original's credential fields"
	}
	return ""
}

func replayNoCredentials(ctx context.Context, e *Env) Verdict {
	k := e.NewKey()
	first, bad := e.original(ctx, k, nil)
	if bad != nil {
		return *bad
	}
	control := e.Send(ctx, Req{Label: "another key's request (what every answer carries)", Key: e.NewKey()})
	replay := e.Send(ctx, Req{Label: "retry", Key: k})
	if v := e.lostConn(replay, control); v != nil {
		return *v
	}
	if v := e.notAReplay(ctx, k, first, replay); v != nil {
		return *v
	}
	if !replay.OK() {
		// An error is no replay: what a replay would carry is unseen.
		return e.Inconclusive("the retry was not replayed (replay/same-status judges it): " + replay.String())
	}
	set, resent := e.resentCredentials(first, replay, control)
	if len(set) == 0 {
		return e.Skip("the original answer sets no credential field of its own (" + strings.Join(credentialFields, ", ") + "): nothing a replay could hand out again")
	}
	observed := fmt.Sprintf("the original set %s; the replay repeated %d of them", strings.Join(set, "; "), len(resent))
	if len(resent) == 0 {
		return e.Pass(observed)
	}
	observed += ": " + strings.Join(resent, "; ")
	if e.Profile.ReplayCredentials == apispec.Unknown {
		return e.Finding("replay_credentials", observed)
	}
	return e.inTTL(e.Unmet("a replay without the original's credential fields (to fix: leave "+strings.Join(credentialFields, ", ")+" out of the stored headers)", observed), first, replay)
}
