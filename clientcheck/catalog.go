package clientcheck

import (
	"fmt"
	"net/http"

	"github.com/idemcheck/idemcheck/scenarios"
)

// RetryAfter is the Retry-After the faults that send one give, in
// seconds: the least the field can say, so that the waits a correct
// client makes keep the catalog fast.
const RetryAfter = 1

// maxAttempts is how many attempts the persistent 503 lets one call make
// before the client counts as retrying without bound.
const maxAttempts = 10

// runPlans are the situations the catalog puts a client in, by name: each
// becomes one case run (one process of the client), judged by the cases
// that read it.
var runPlans = []struct {
	name string
	plan Plan
}{
	{"sequential", Plan{Calls: 3}},
	{"parallel", Plan{Parallel: 4}},
	{"keys-a", Plan{Calls: 4}},
	{"keys-b", Plan{Calls: 4}},
	{"lost-answer", Plan{Fault: Fault{Kind: Drop, Mode: "fin"}}},
	{"timeout", Plan{Fault: Fault{Kind: Hold}}},
	{"status-500", Plan{Fault: Fault{Kind: Status, Status: http.StatusInternalServerError}}},
	{"status-502", Plan{Fault: Fault{Kind: Status, Status: http.StatusBadGateway}}},
	{"status-503", Plan{Fault: Fault{Kind: Status, Status: http.StatusServiceUnavailable, RetryAfter: RetryAfter}}},
	{"status-504", Plan{Fault: Fault{Kind: Status, Status: http.StatusGatewayTimeout}}},
	{"in-flight-409", Plan{Fault: Fault{Kind: Status, Status: http.StatusConflict, RetryAfter: RetryAfter}}},
	{"rate-limited-429", Plan{Fault: Fault{Kind: Status, Status: http.StatusTooManyRequests, RetryAfter: RetryAfter}}},
	{"invalid-400", Plan{Fault: Fault{Kind: Status, Status: http.StatusBadRequest, Identical: true}}},
	{"unprocessable-422", Plan{Fault: Fault{Kind: Status, Status: http.StatusUnprocessableEntity, Identical: true}}},
	{"persistent-503", Plan{Fault: Fault{Kind: Status, Status: http.StatusServiceUnavailable, Every: true}, Limit: maxAttempts}},
}

// Requirement sources quoted by the cases.
const (
	draft21 = "draft-ietf-httpapi-idempotency-key-header-07 §2.1"
	draft22 = "draft-ietf-httpapi-idempotency-key-header-07 §2.2"
	draft27 = "draft-ietf-httpapi-idempotency-key-header-07 §2.7"
	aip155  = "AIP-155"
	rfc9110 = "RFC 9110 §10.2.3"
)

// Case is one client catalog case: what it checks, the runs it reads and
// its judge.
type Case struct {
	scenarios.Meta
	// Runs are the runs it judges; All: every run the catalog made as
	// well (a rule every attempt must keep).
	Runs  []string
	All   bool
	judge func(in input) verdict
}

func meta(id, family, req string, level scenarios.Level, sentence, explanation string) scenarios.Meta {
	return scenarios.Meta{ID: id, Family: family, Requirements: []string{req}, Level: level, Requirement: sentence, Explanation: explanation}
}

// sameOnRetry is the requirement every retry case checks.
const sameOnRetrySentence = draft22 + ": the idempotency key MUST NOT be reused for a request with a different payload; " +
	aip155 + ": the same request_id is sent on every retry of a call. A retry repeats its call's key and payload."

func retryCase(id, run, after string) Case {
	return Case{
		Meta: meta("retry/"+id, "retry", "IK-CLIENT-5", scenarios.Must, sameOnRetrySentence,
			"Every retry after "+after+" re-sends the first attempt's key and body byte for byte."),
		Runs:  []string{run},
		judge: func(in input) verdict { return sameOnRetry(in.run(run), after) },
	}
}

// Catalog is the client catalog, in report order.
func Catalog() []Case {
	return []Case{
		{
			Meta: meta("key/present", "key", "IK-CLIENT-1", scenarios.Must,
				draft22+": the key protects a call only when the client sends it; "+aip155+": every mutating call carries a request_id.",
				"Every attempt of every mutating call carries the key field."),
			Runs: []string{"sequential"}, All: true, judge: keyPresent,
		},
		{
			Meta: meta("key/syntax", "key", "IK-CLIENT-2", scenarios.Must,
				draft21+": the Idempotency-Key field is an Item Structured Header; its value MUST be a String (RFC 8941 sf-string).",
				"The key field is one line in the profile's syntax (sf-string under ietf, raw where the profile allows it), of allowed length and printable characters."),
			Runs: []string{"sequential"}, All: true, judge: keySyntax,
		},
		{
			Meta: meta("key/unique-sequential", "key", "IK-CLIENT-3", scenarios.Must,
				draft22+": the idempotency key MUST be unique; clients MUST implement that uniqueness.",
				"Calls made one after another each get their own key."),
			Runs: []string{"sequential"}, judge: func(in input) verdict { return unique(in.run("sequential"), "one after another") },
		},
		{
			Meta: meta("key/unique-parallel", "key", "IK-CLIENT-3", scenarios.Must,
				draft22+": the idempotency key MUST be unique; clients MUST implement that uniqueness.",
				"Calls made at once through one shared client object each get their own key."),
			Runs: []string{"parallel"}, judge: func(in input) verdict { return unique(in.run("parallel"), "at once through one client") },
		},
		{
			Meta: meta("key/unpredictable", "key", "IK-CLIENT-4", scenarios.Should,
				draft22+": it is RECOMMENDED that a UUID or a similar random identifier be used as the idempotency key.",
				"Keys are random: no counters, timestamps or values a process repeats."),
			Runs: []string{"keys-a", "keys-b"}, judge: unpredictable,
		},
		retryCase("lost-answer", "lost-answer", "a lost answer (the call committed, the connection closed)"),
		retryCase("timeout", "timeout", "a timeout (the call committed, the answer held past the client's timeout)"),
		retryCase("after-500", "status-500", "a 500"),
		retryCase("after-502", "status-502", "a 502"),
		retryCase("after-503", "status-503", "a 503 with Retry-After"),
		retryCase("after-504", "status-504", "a 504"),
		retryCase("after-409", "in-flight-409", "a 409 (a request with the key in flight)"),
		retryCase("after-429", "rate-limited-429", "a 429 with Retry-After"),
		{
			Meta: meta("key/one-per-call", "key", "IK-CLIENT-5", scenarios.Must, sameOnRetrySentence,
				"One logical call never sends a second key, whatever the fault."),
			All: true, judge: onePerCall,
		},
		{
			Meta: meta("lost/one-execution", "lost", "IK-CLIENT-6", scenarios.Must,
				"draft-ietf-httpapi-idempotency-key-header-07 §1: idempotency lets a client retry a request whose answer was lost (a network failure, a timeout) without the operation being performed twice; the retry gets the original outcome.",
				"A call whose answer was lost ends in success with the original resource's id and exactly one execution."),
			Runs: []string{"lost-answer", "timeout"}, judge: oneExecution,
		},
		{
			Meta: meta("lost/retried", "lost", "IK-CLIENT-11", scenarios.Should,
				"draft-ietf-httpapi-idempotency-key-header-07 §1: the key exists so that a client can retry a request whose answer was lost without the operation being performed twice.",
				"A call whose answer was lost (the connection closed, or the client's timeout) is retried under its key, not reported failed at once."),
			Runs: []string{"lost-answer", "timeout"}, judge: retried,
		},
		noResend("after-400", "invalid-400", http.StatusBadRequest),
		noResend("after-422", "unprocessable-422", http.StatusUnprocessableEntity),
		{
			Meta: meta("retry-after/honoured", "retry-after", "IK-CLIENT-8", scenarios.Should,
				rfc9110+": servers send the Retry-After header field to indicate how long the user agent ought to wait before making a follow-up request.",
				"After an answer with Retry-After the client waits at least that long before its next attempt."),
			Runs: []string{"in-flight-409", "rate-limited-429", "status-503"}, judge: retryAfterHonoured,
		},
		{
			Meta: meta("retry/bounded", "retry", "IK-CLIENT-9", scenarios.Should,
				"Practice (the retry guides of SDKs and AIPs): the retries of a failing call are bounded in number and back off, waiting longer after each failure.",
				"Under a persistent 503 the client gives up after a bounded number of attempts, with growing waits."),
			Runs: []string{"persistent-503"}, judge: bounded,
		},
		{
			Meta: meta("retry/409-waited", "retry", "IK-CLIENT-10", scenarios.Should,
				draft27+": if the request is retried while the original is still being processed, the resource will reply with 409; clients MUST correct the request before retrying, except after a 409.",
				"A 409 for a request in flight is waited out and retried, not reported as the call's failure."),
			Runs: []string{"in-flight-409"}, judge: waited409,
		},
	}
}

func noResend(id, run string, status int) Case {
	return Case{
		Meta: meta("no-resend/"+id, "no-resend", "IK-CLIENT-7", scenarios.Must,
			draft27+": if the request is not valid, the resource answers 4xx; clients MUST correct the request before retrying.",
			fmt.Sprintf("After a %d (%s) the client does not send the identical request again.", status, http.StatusText(status))),
		Runs:  []string{run},
		judge: func(in input) verdict { return noIdenticalResend(in.run(run), status) },
	}
}
