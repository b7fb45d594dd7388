package scenarios

import (
	"regexp"
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/grpccode"
	"github.com/idemcheck/idemcheck/wire"
)

// The requirement sentences are the draft's (and vendors'): an HTTP
// field, statuses 409, 422, 400. A case that runs over a gRPC target is
// judged by the gRPC form (the key in a message field or metadata, the
// profile's codes), so its sentence gets a note saying that form; the
// sentence itself, and the case and requirement IDs, stay.

// grpcRequirementNotes are the notes by case ID. {key} is where the key
// goes, {absent} what a call without one sends, {inflight}, {mismatch} and {missing} the codes the profile
// expects (or what it leaves open).
var grpcRequirementNotes = map[string]string{
	"concurrent/changed-body-in-flight":    "the conflict is {inflight}, the mismatch {mismatch}",
	"concurrent/conflict-not-poisoned":     "the in-flight conflict is {inflight}",
	"concurrent/in-flight-conflict":        "the conflict is {inflight}",
	"concurrent/in-flight-offsets":         "the conflict is {inflight}",
	"replicas/in-flight-other-replica":     "the conflict is {inflight}",
	"scope/other-user-in-flight":           "never {inflight} for the first principal's call",
	"crash/handler-crash":                  "the crash is INTERNAL or UNKNOWN (or no answer); retries may get {inflight} until the lease ends",
	"crash/handler-timeout":                "the timeout is DEADLINE_EXCEEDED or another server code (or no answer); retries may get {inflight} until the lease ends",
	"lease/crash-recovers":                 "retries may get {inflight} until the lease ends",
	"errors/auth-not-stored":               "UNAUTHENTICATED (401) and RESOURCE_EXHAUSTED (429)",
	"errors/business-error-kept":           "a business error is a code such as FAILED_PRECONDITION (the business_error variant's status)",
	"replay/business-error":                "a business error is a code such as FAILED_PRECONDITION (the business_error variant's status)",
	"errors/idempotency-errors-not-stored": "the idempotency errors are codes: an invalid or missing key {missing}, in flight {inflight}, a mismatch {mismatch}",
	"errors/transient-5xx":                 "a 5xx is a code google.rpc.Code maps to one (UNAVAILABLE, INTERNAL, UNKNOWN, DEADLINE_EXCEEDED, ...)",
	"errors/failure-releases-key":          "the failure is the transient_error variant's code (e.g. UNAVAILABLE)",
	"errors/validation-not-stored":         "the validation error is the invalid variant's code (e.g. INVALID_ARGUMENT)",
	"expiry/fresh-after-ttl":               "the expired-key alternative is ABORTED or ALREADY_EXISTS (409)",
	"mismatch/changed-body":                "a changed request message under a used key gets {mismatch} (gRPC has no 422)",
	"replicas/mismatch-other-replica":      "a changed request message under a used key gets {mismatch} (gRPC has no 422)",
	"missing/rejected":                     "the key is {key}; a call without one ({absent}) gets {missing}, and must not execute",
	"replay/same-headers":                  "a gRPC answer has no representation headers: the response metadata (headers, trailers) the profile's replay_metadata names",
	"scope/case-sensitive":                 "the key is {key}, an opaque string",
	"security/hostile-keys":                "the key is {key}; a client-error code (INVALID_ARGUMENT, ...) or opaque handling, never a server code (INTERNAL, UNKNOWN, ...)",
	"security/low-entropy-keys":            "the key is {key}; too short a key gets a client-error code such as INVALID_ARGUMENT",
	"security/unauthenticated-known-key":   "a call without the principal's metadata gets UNAUTHENTICATED (401)",
	"syntax/empty-key":                     "the key is {key}, empty or blank; it gets a client-error code such as INVALID_ARGUMENT",
	"syntax/key-accepted":                  "the key is {key}, not an HTTP field: no sf-string, a string in the profile's key format",
	"syntax/max-length":                    "the key is {key}; one character more gets a client-error code, never a server code (INTERNAL, UNKNOWN, ...)",
	"syntax/repeated-header":               "the key is {key}: two values of it in one call",
	"outbox/none-for-mismatch":             "the refusal is {mismatch}",
	"outbox/none-for-failed":               "the failure is the transient_error variant's code (e.g. UNAVAILABLE)",
}

// httpThings are what a sentence names that has another form over gRPC:
// a status, a status class, a header field.
var httpThings = regexp.MustCompile(`\b[1-5]\d\d\b|\b[245]xx\b|Idempotency-Key|\bheaders?\b|sf-string`)

// carrierNotes are the requirement notes of each carrier (by its name:
// words, not behaviour) whose statuses and fields have other forms.
var carrierNotes = map[string]map[string]string{"gRPC": grpcRequirementNotes}

// carrierMeta is c's Meta as t, reached over carrier k, judges it: its
// requirement sentence, and its explanation where that names an HTTP
// status or field, with the case's note for the carrier. c.Meta unchanged
// for a carrier without notes and a case that does not apply over it
// (its skip says why).
func carrierMeta(k wire.Carrier, t *apispec.Target, p *apispec.Profile, c Case) Meta {
	m := c.Meta
	note, ok := carrierNotes[k.Name()][m.ID]
	if !ok || c.unfit(k, t) != "" {
		return m
	}
	note = " Over " + k.Name() + ": " + strings.NewReplacer(
		"{key}", grpcKeyPlace(t),
		"{absent}", grpcKeyAbsent(t),
		"{inflight}", codesWord(p.InFlightStatus, "the profile's in_flight_status"),
		"{mismatch}", codesWord(p.MismatchStatus, "the profile's mismatch_status"),
		"{missing}", codesWord(p.MissingStatus, "the profile's missing_status"),
	).Replace(note) + "."
	m.Requirement += note
	if httpThings.MatchString(m.Explanation) {
		m.Explanation += note
	}
	return m
}

// grpcKeyPlace says where t's key goes.
func grpcKeyPlace(t *apispec.Target) string {
	switch {
	case t.Key == nil:
		return "the key"
	case t.Key.FirstSent:
		return "the " + t.Key.Field + " message's key (AEP-155's {key, first_sent})"
	case t.Key.Field != "":
		return "the " + t.Key.Field + " field of the request message"
	}
	return "the " + t.Key.Metadata + " metadata entry"
}

// grpcKeyAbsent is what a call without t's key sends (proto3 sends an
// empty string as it sends an unset one).
func grpcKeyAbsent(t *apispec.Target) string {
	switch {
	case t.Key != nil && t.Key.Metadata != "":
		return "no such entry"
	case t.Key != nil && t.Key.FirstSent:
		return "the message unset"
	}
	return "the field unset, or empty"
}

// codesWord names statuses as a gRPC target is judged by them: a code by
// its name, an HTTP status by the codes that map to it ("409 (ABORTED or
// ALREADY_EXISTS)"); unset is what the profile leaves open.
func codesWord(ss apispec.Statuses, unset string) string {
	if len(ss) == 0 {
		return unset + " (unset: any error)"
	}
	words := make([]string, len(ss))
	for i, s := range ss {
		words[i] = apispec.StatusName(s)
		if names := grpccode.Names(s); len(names) > 0 {
			words[i] += " (" + strings.Join(names, " or ") + ")"
		}
	}
	return strings.Join(words, " or ")
}
