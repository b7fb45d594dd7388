package reference

import (
	"fmt"
	"slices"
	"strings"
)

// Defect is a named, deliberate bug the middleware can be built with, so
// that a conformance suite can prove it catches it. Defects combine.
type Defect string

// The defect catalog. Each constant's comment says what the bug does.
const (
	// NoFingerprint: the payload is never compared; a changed body under a
	// used key replays the old response.
	NoFingerprint Defect = "no-fingerprint"
	// CheckThenInsert: Lookup, then (after the work a real service does in
	// between) an insert that overwrites whatever got there first; a
	// same-key burst executes many times.
	CheckThenInsert Defect = "check-then-insert"
	// LookupBeforeBody: a check-then-insert whose lookup runs as soon as
	// the headers are in, before the body is read, and whose insert runs
	// once it is: a window of microseconds when the body arrives with the
	// headers, as wide as the client makes it otherwise.
	LookupBeforeBody Defect = "lookup-before-body"
	// ExpiredReclaimUnlocked: a key whose record expired is reclaimed
	// without an in-flight marker, its outcome stored only at the end:
	// every same-key request that arrives while the reclaiming one runs
	// executes too.
	ExpiredReclaimUnlocked Defect = "expired-reclaim-unlocked"
	// NoInflightLock: in-flight records are treated as absent; a retry
	// during the first execution runs the handler again.
	NoInflightLock Defect = "no-inflight-lock"
	// BlockInflight: a retry during the first execution waits for it and
	// then replays instead of answering 409.
	BlockInflight Defect = "block-inflight"
	// NoUserScope: the principal is left out of the scope; another user's
	// request with the same key gets the first user's response.
	NoUserScope Defect = "no-user-scope"
	// NoEndpointScope: method and path are left out of the scope; the same
	// key on another endpoint replays (or conflicts with) the first one.
	NoEndpointScope Defect = "no-endpoint-scope"
	// NoExpiry: records never expire; a key is never fresh again.
	NoExpiry Defect = "no-expiry"
	// EarlyExpiry: records expire after a tenth of the declared TTL.
	EarlyExpiry Defect = "early-expiry"
	// Cache5xx: 5xx outcomes are stored and replayed, so a transient
	// failure is never retried.
	Cache5xx Defect = "cache-5xx"
	// NoCache4xx: 4xx outcomes release the key; a declined (402) request
	// executes again on retry.
	NoCache4xx Defect = "no-cache-4xx"
	// ReplayAs200: replays answer 200 whatever status was stored.
	ReplayAs200 Defect = "replay-as-200"
	// ReplayDropsHeaders: replays carry the body but none of the stored
	// headers (no Content-Type, no Location).
	ReplayDropsHeaders Defect = "replay-drops-headers"
	// ReplayJoinsHeaders: headers are stored as a map of strings: every
	// field the handler set, cookies included, each as one comma-joined
	// line, which breaks Set-Cookie.
	ReplayJoinsHeaders Defect = "replay-joins-headers"
	// ReplaySplitsHeaders: stored header values are split at their commas
	// into lines of their own (gofiber/fiber PR #4693), which breaks a
	// Content-Disposition filename and a cookie's Expires date.
	ReplaySplitsHeaders Defect = "replay-splits-headers"
	// ReplayCredentials: the first answer's Set-Cookie, WWW-Authenticate
	// and Authentication-Info are stored and handed to every replay
	// (granit-fx/granit-dotnet PR #1151).
	ReplayCredentials Defect = "replay-credentials"
	// ReplayRebuildsErrors: a stored error (the declined 402) is not
	// replayed as stored but rebuilt: a fresh trace id, the detail dropped.
	ReplayRebuildsErrors Defect = "replay-rebuilds-errors"
	// ConflictLeaksStored: the 422 for a changed payload carries the
	// stored response and the stored request's hash (AdCP's
	// conflict_no_payload_leak).
	ConflictLeaksStored Defect = "conflict-leaks-stored"
	// ReplayTruncatesBody: stored bodies are cut at 64 KiB (a column
	// limit), so a large response replays truncated.
	ReplayTruncatesBody Defect = "replay-truncates-body"
	// ReplayReencodesBody: bodies are stored as UTF-8 text, so the bytes of
	// a binary response that are not valid UTF-8 replay as U+FFFD.
	ReplayReencodesBody Defect = "replay-reencodes-body"
	// FailureWedgesKey: a handler that panics or times out (504) leaves its
	// key "in progress": every retry gets 409, past any lease.
	FailureWedgesKey Defect = "failure-wedges-key"
	// ConflictAs500: a request that loses the race for its key (the record
	// is in flight) gets 500, as a unique-constraint violation surfacing as
	// an internal error, instead of 409.
	ConflictAs500 Defect = "conflict-as-500"
	// MismatchAs409: a payload mismatch answers 409 instead of 422.
	MismatchAs409 Defect = "mismatch-as-409"
	// StoreConflicts: the middleware's own 409/422 answers are saved as
	// the key's outcome and replayed to every later retry.
	StoreConflicts Defect = "store-conflicts"
	// MissingKeyPassthrough: a mutating request without a key runs with no
	// idempotency at all instead of 400.
	MissingKeyPassthrough Defect = "missing-key-passthrough"
	// UnvalidatedKey: the field is used as-is: repeated lines, empty,
	// overlong or control-character keys are accepted.
	UnvalidatedKey Defect = "unvalidated-key"
	// LeaseNeverExpires: an in-flight record stays locked until its TTL, so
	// a crashed request blocks its key with 409s.
	LeaseNeverExpires Defect = "lease-never-expires"
	// NoQueryFingerprint: the query is left out of the request's identity;
	// the same key and body with another query (?capture=false after
	// ?capture=true) replays the first response.
	NoQueryFingerprint Defect = "no-query-fingerprint"
	// ReplayCodedBody: the response is gzip-coded inside the middleware
	// for the request that ran it, and stored and replayed coded, with its
	// Content-Encoding, whatever the retry accepts: a retry sent with
	// Accept-Encoding: identity receives gzip.
	ReplayCodedBody Defect = "replay-coded-body"
	// ExactKeySpelling: the key field is looked up by its exact spelling
	// Idempotency-Key; under any other (idempotency-key, as every HTTP/2
	// request and many gateways send it) the request runs as a keyless one,
	// unprotected: every retry executes. HTTP/1.1 needs the server wrapped
	// with KeepFieldSpelling for the spelling to be seen.
	ExactKeySpelling Defect = "exact-key-spelling"
	// ProcessLocalLock: the claim's lookup and write are guarded by an
	// in-process mutex, not one atomic store operation; correct on one
	// replica, a same-key burst spread over replicas executes many times.
	ProcessLocalLock Defect = "process-local-lock"
	// EventOutsideTx: the handler publishes its event straight to the
	// broker instead of through the outbox: an execution whose outcome is
	// then not stored (a crash, a lost lease, a failed commit) has
	// published anyway, and its retry publishes again; a failed publish
	// is lost. Needs events (serve --events).
	EventOutsideTx Defect = "event-outside-tx"
	// EventOnReplay: every replay publishes the key's event again (an
	// after-response hook that does not know a replay from an execution).
	EventOnReplay Defect = "event-on-replay"
	// RelayRepublish: a restarted relay publishes the events it already
	// sent once more, without their ids, so no consumer can tell them
	// from new executions.
	RelayRepublish Defect = "relay-republish"
	// CancelledResultWrite: the handler's work does not watch the client,
	// but the result write runs under the request's context: a client that
	// hangs up while the handler runs cancels it, the write fails, the
	// failure path releases the claim and the effect stays, so the retry
	// executes again (fullstackhero/dotnet-starter-kit PR #1333). A store
	// that commits the effects with the record (PostgreSQL) rolls both
	// back instead, which is safe.
	CancelledResultWrite Defect = "cancelled-result-write"
	// ExpiredRowBlocksClaim: the claim is an insert that fails on the
	// key's expired record until a purge removes it (500 ms after its
	// TTL), and the re-read that follows skips expired records and finds
	// nothing: every request in that window runs without a claim and
	// stores nothing, so same-key retries at the TTL edge all execute
	// (granit VULN-301).
	ExpiredRowBlocksClaim Defect = "expired-row-blocks-claim"
	// EventForDecline: a declined request (402), which changed nothing,
	// publishes an event all the same (charge.declined). Needs events.
	EventForDecline Defect = "event-for-decline"
	// StaleIDAfterExpiry: the event of a key's execution names the
	// resource its first execution created, so a re-execution after the
	// key expired announces the old id instead of its new one. Needs
	// events.
	StaleIDAfterExpiry Defect = "stale-id-after-expiry"
	// FirstSentIgnored: AEP-155's first_sent is not read (a server that
	// takes the key alone): an expired or future first_sent is accepted,
	// and a reused key with another first_sent is the same request. Only
	// the gRPC reference's CreateRefund has a first_sent.
	FirstSentIgnored Defect = "first-sent-ignored"
	// ReleaseBeforeStore: on completion the claim is released first and
	// the response stored afterwards, releaseGap later (a second write to
	// the store): a duplicate arriving in between finds no record and
	// executes again.
	ReleaseBeforeStore Defect = "release-before-store"
	// LeaseAsMillis: the configured lease is read in the wrong unit (5 s
	// as 5 ms): an in-flight claim is taken over by any duplicate that
	// arrives a few milliseconds into the original's run.
	LeaseAsMillis Defect = "lease-as-millis"
	// UpdateReplaysCurrentState: a replayed update or action (PATCH of a
	// charge, its cancel) answers the resource's current state instead of
	// the stored answer: a retry after another key changed the resource
	// gets that key's change.
	UpdateReplaysCurrentState Defect = "update-replays-current-state"
	// UpdateIgnoresFingerprint: the payload of an update (PATCH) is never
	// compared; a changed body under a used key replays the old answer.
	UpdateIgnoresFingerprint Defect = "update-ignores-fingerprint"
	// ActionReexecutes: an action on an existing resource (a charge's
	// cancel) runs outside the idempotency layer: its retry executes again
	// and answers 400 already cancelled.
	ActionReexecutes Defect = "action-reexecutes"
)

// DefectInfo documents one defect: what it breaks, and the requirement
// (spec.md IK-* ids) it violates.
type DefectInfo struct {
	Defect      Defect
	Breaks      string
	Requirement string
}

var defectCatalog = []DefectInfo{
	{NoFingerprint, "same key + changed body replays the old response instead of 422", "IK-MISMATCH-1, IK-MISMATCH-5"},
	{CheckThenInsert, "non-atomic claim: a same-key burst executes more than once", "IK-CONCURRENT-2, IK-LOST-3"},
	{LookupBeforeBody, "non-atomic claim looked up before the body is read: requests whose headers arrive together all execute", "IK-CONCURRENT-2"},
	{ExpiredReclaimUnlocked, "an expired key is reclaimed without an in-flight marker: requests arriving while it runs execute too", "IK-CONCURRENT-2, IK-EXPIRY-2"},
	{NoInflightLock, "a retry while the first runs executes again instead of 409", "IK-CONCURRENT-1, IK-CONCURRENT-2"},
	{BlockInflight, "a retry while the first runs waits and replays instead of 409", "IK-CONCURRENT-1 (fails unless block_ok)"},
	{NoUserScope, "another user with the same key receives the first user's response", "IK-SCOPE-1, IK-SECURITY-3"},
	{NoEndpointScope, "the same key on another endpoint replays the first endpoint's response", "IK-SCOPE-2"},
	{NoExpiry, "keys never become fresh after the TTL", "IK-EXPIRY-2"},
	{EarlyExpiry, "records vanish at TTL/10: a retry inside the TTL executes again", "IK-EXPIRY-1, IK-REPLAY-3"},
	{Cache5xx, "a transient 5xx is stored and replayed instead of re-executed", "IK-ERRORS-1 (seeds profile)"},
	{NoCache4xx, "a business 4xx (402) is not stored; the retry executes again", "IK-REPLAY-5, IK-ERRORS-2"},
	{ReplayAs200, "replays answer 200 instead of the stored status (201, 402)", "IK-REPLAY-1"},
	{ReplayDropsHeaders, "replays lose Content-Type and Location", "IK-REPLAY-2, IK-REPLAY-6"},
	{ReplayJoinsHeaders, "every header stored as one comma-joined line: the cookies are replayed, folded into one Set-Cookie line", "IK-REPLAY-6, IK-REPLAY-9"},
	{ReplaySplitsHeaders, "stored header values split at their commas: Content-Disposition's filename replays broken over two lines", "IK-REPLAY-6"},
	{ReplayCredentials, "the first answer's Set-Cookie (a per-charge cookie) is handed to every replay", "IK-REPLAY-9"},
	{ReplayRebuildsErrors, "a stored 402 replays rebuilt: a fresh trace_id, its detail gone", "IK-REPLAY-5, IK-ERRORS-2"},
	{ConflictLeaksStored, "the 422 for a changed payload carries the stored response and the stored body's SHA-256", "IK-SECURITY-6"},
	{ReplayTruncatesBody, "a response larger than 64 KiB replays truncated", "IK-REPLAY-2"},
	{ReplayReencodesBody, "a binary response replays re-encoded as UTF-8 text", "IK-REPLAY-2"},
	{FailureWedgesKey, "after a handler crash or timeout the key answers 409 in flight forever", "IK-LEASE-1, IK-ERRORS-5"},
	{ConflictAs500, "a request that loses the race for its key (in flight) gets 500 instead of 409", "IK-CONCURRENT-1"},
	{MismatchAs409, "a payload mismatch answers 409 instead of 422", "IK-MISMATCH-1 (ietf profile)"},
	{StoreConflicts, "a 409/422 answer is stored as the key's outcome and replayed", "IK-ERRORS-6, IK-CONCURRENT-3, IK-MISMATCH-3"},
	{MissingKeyPassthrough, "a mutating request without a key executes instead of 400", "IK-MISSING-1"},
	{UnvalidatedKey, "malformed keys (empty, >255 chars, repeated field) are accepted", "IK-SECURITY-1, IK-SECURITY-2"},
	{LeaseNeverExpires, "an in-flight record of a dead request blocks its key until the TTL", "IK-LEASE-1"},
	{NoQueryFingerprint, "same key + body with another query replays the first query's response instead of 422", "IK-MISMATCH-1, IK-MISMATCH-5"},
	{ReplayCodedBody, "a response stored gzip-coded replays coded to a retry that accepts only identity", "IK-REPLAY-2 (RFC 9110 12.5.3)"},
	{ExactKeySpelling, "the key field is honoured only when spelled Idempotency-Key: idempotency-key (every HTTP/2 request) runs unprotected, every retry executes", "IK-REPLAY-3 (field names are case-insensitive, RFC 9110 5.1)"},
	{ProcessLocalLock, "a claim locked in process only: same-key requests on two replicas both execute", "IK-CONCURRENT-2 (replicas/ family)"},
	{EventOutsideTx, "the event is published before the outcome is stored: an execution that is then rolled back or retried publishes twice, a failed publish is lost", "one event per execution (events source, outbox)"},
	{EventOnReplay, "each replay publishes the key's event again", "one event per execution; none for a replay (events source)"},
	{RelayRepublish, "a restarted relay republishes sent events without their ids: duplicates no consumer can dedupe", "one event per execution (events source, outbox)"},
	{ReleaseBeforeStore, "the claim is released before the response is stored: a duplicate arriving at the original's completion executes again", "IK-CONCURRENT-2"},
	{LeaseAsMillis, "the lease is read in milliseconds (5 s as 5 ms): a duplicate a few milliseconds into the original's run takes the claim over and executes", "IK-CONCURRENT-1, IK-CONCURRENT-2, IK-LEASE-3"},
	{UpdateReplaysCurrentState, "update family: a replayed PATCH or cancel answers the charge's current state, another key's change included, not the stored answer", "IK-UPDATE-1"},
	{UpdateIgnoresFingerprint, "update family: a PATCH under a used key with a changed body replays the old answer instead of 422", "IK-MISMATCH-1"},
	{ActionReexecutes, "update family: a retried cancel executes again (400 already cancelled) instead of replaying", "IK-REPLAY-3"},
	{CancelledResultWrite, "a client that hangs up while the handler runs cancels the result write: the claim is released, the effect stays, the retry executes again", "IK-LOST-4"},
	{ExpiredRowBlocksClaim, "at the TTL edge the claim fails on the expired record and the re-read misses it: same-key requests there all execute", "IK-CONCURRENT-2, IK-EXPIRY-5"},
	{EventForDecline, "a declined request, which changed nothing, publishes an event", "IK-OUTBOX-1 (events source, outbox)"},
	{StaleIDAfterExpiry, "a re-execution after expiry announces the first execution's resource id, not its own", "IK-OUTBOX-2 (events source, outbox)"},
	{FirstSentIgnored, "gRPC only: an AEP-155 first_sent expired or in the future is accepted, and a changed one replays", "IK-FIRSTSENT-1 (AEP-155 must reject), IK-MISMATCH-1"},
}

// Defects returns the catalog sorted by name.
func Defects() []DefectInfo {
	out := slices.Clone(defectCatalog)
	slices.SortFunc(out, func(a, b DefectInfo) int { return strings.Compare(string(a.Defect), string(b.Defect)) })
	return out
}

// LookupDefect returns the catalog entry of name.
func LookupDefect(name string) (DefectInfo, bool) {
	for _, d := range defectCatalog {
		if string(d.Defect) == name {
			return d, true
		}
	}
	return DefectInfo{}, false
}

// ParseDefects turns names into Defects, rejecting unknown names.
func ParseDefects(names []string) ([]Defect, error) {
	out := make([]Defect, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		d, ok := LookupDefect(n)
		if !ok {
			return nil, fmt.Errorf("unknown defect %q (known: %s)", n, strings.Join(defectNames(), ", "))
		}
		out = append(out, d.Defect)
	}
	return out, nil
}

func defectNames() []string {
	names := make([]string, 0, len(defectCatalog))
	for _, d := range Defects() {
		names = append(names, string(d.Defect))
	}
	return names
}

// NeedsEvents reports whether d breaks only the events the server
// publishes, so that it shows only with events on (demo Options.Events).
func (d Defect) NeedsEvents() bool {
	switch d {
	case EventOutsideTx, EventOnReplay, RelayRepublish, EventForDecline, StaleIDAfterExpiry:
		return true
	}
	return false
}

// GRPCOnly reports whether d has a gRPC form only (the gRPC reference,
// serve --grpc): the HTTP reference has no first_sent to ignore.
func (d Defect) GRPCOnly() bool { return d == FirstSentIgnored }

// UpdateOnly reports a defect of the operations on an existing charge
// (PATCH, cancel), which the reference contract's operations never send:
// its row is in the scenarios' update test, not the defect matrix.
func (d Defect) UpdateOnly() bool {
	return d == UpdateReplaysCurrentState || d == UpdateIgnoresFingerprint || d == ActionReexecutes
}

type defectSet map[Defect]bool

func (s defectSet) has(d Defect) bool { return s[d] }
