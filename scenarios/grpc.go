package scenarios

import (
	"strings"

	"github.com/idemcheck/idemcheck/apispec"
)

// The catalog over gRPC (docs/grpc.md). A gRPC target's calls go through
// wire's gRPC carrier and come back as HTTP statuses (google.rpc.Code's
// mapping), so a case that judges statuses, bodies and executions runs
// unchanged; it is listed in grpcReady once it has been run against the
// reference gRPC service and its defects. A case whose requirement has no
// gRPC form skips saying so (grpcNever); any other skips as not yet run
// over gRPC, never silently judged by HTTP rules.

// grpcReady are the cases that run over a gRPC target.
var grpcReady = map[string]bool{
	"replay/single-execution": true, "replay/same-status": true, "replay/same-body": true, "replay/business-error": true,
	"replay/same-headers": true, "replay/marker-header": true,
	"mismatch/changed-body": true, "mismatch/original-survives": true, "mismatch/repeat-fails-again": true,
	"missing/rejected": true, "missing/repeat-fails-again": true, "missing/optional-executes": true,
	"concurrent/same-key-burst": true, "concurrent/in-flight-conflict": true, "concurrent/in-flight-offsets": true,
	"concurrent/conflict-not-poisoned": true, "concurrent/changed-body-in-flight": true,
	"scope/other-user-isolated": true, "scope/other-user-in-flight": true, "scope/other-endpoint": true,
	"errors/business-error-kept": true, "errors/transient-5xx": true, "errors/failure-releases-key": true,
	"errors/validation-not-stored": true, "errors/auth-not-stored": true, "errors/idempotency-errors-not-stored": true,
	"expiry/replays-before-ttl": true, "expiry/fresh-after-ttl": true, "expiry/counted-from": true, "expiry/expired-key-burst": true,
	"lost/dropped-response-retry": true, "lost/retry-storm": true, "scope/case-sensitive": true, "syntax/repeated-header": true,
	"syntax/key-accepted": true, "syntax/max-length": true, "syntax/empty-key": true,
	"syntax/first-sent-expired": true, "syntax/first-sent-future": true,
	"security/invalid-format-rejected": true, "security/hostile-keys": true, "security/cross-principal-guess": true,
	"security/low-entropy-keys": true, "security/unauthenticated-known-key": true, "crash/handler-timeout": true,
	"replay/volatile-fields": true, "fidelity/large-body": true, "crash/handler-crash": true,
	"lease/slow-outlives-lease": true, "lease/crash-recovers": true,
	"replicas/burst-across": true, "replicas/in-flight-other-replica": true, "replicas/replay-other-replica": true,
	"replicas/mismatch-other-replica": true, "replicas/other-user-other-replica": true, "replicas/ttl-other-replica": true,
	"outbox/one-per-execution": true, "outbox/none-for-replay": true, "outbox/lost-answer-retry": true, "outbox/same-key-burst": true,
	"outbox/none-for-mismatch": true, "outbox/none-for-rejected": true, "outbox/lease-takeover": true,
	"outbox/none-for-failed": true, "security/conflict-no-leak": true,
	"update/after-other-key": true, // TestGRPCSetup (the reference has no update RPC: its refund declared one)
}

// grpcNever are the cases (by ID, or family prefix ending in /) whose
// requirement does not exist for an RPC, with why.
var grpcNever = map[string]string{
	"problem/":                   "problem+json is HTTP's error document; a gRPC error is a google.rpc.Status",
	"mismatch/problem-link":      "problem+json is HTTP's error document; a gRPC error is a google.rpc.Status",
	"missing/problem-link":       "problem+json is HTTP's error document; a gRPC error is a google.rpc.Status",
	"method/":                    "an RPC has no HTTP method",
	"mismatch/added-field":       "a protobuf message has no member outside its schema to add (mutations: changes a field for mismatch/changed-body)",
	"scope/other-method":         "an RPC has no HTTP method",
	"syntax/malformed-sf-string": "a gRPC key is a message field or a metadata value, not an RFC 9651 sf-string",
	"syntax/cross-form":          "a gRPC key is a message field or a metadata value, not an RFC 9651 sf-string",
	"replay/canonical-json":      "the request travels as binary protobuf: JSON member order and whitespace never reach the server",
	"replay/key-field-spelling":  "a key field has one name, and metadata keys are lower case on the wire (HTTP/2): there is no other spelling to send",
	"fidelity/created-headers":   "Location and the created resource's header fields are HTTP's",
	"fidelity/binary-body":       "a gRPC answer is a message: there is no non-JSON body to keep",
	"concurrent/retry-after":     "Retry-After is an HTTP field",
	"replay/no-credentials":      "Set-Cookie and HTTP authentication challenges are HTTP fields: a gRPC answer sets no cookie",
	"fidelity/content-coding":    "gRPC compresses each message below the handler (grpc-encoding, chosen for each call from that call's grpc-accept-encoding): a service stores and replays the message, re-compressed for the retry's own call, and replay/same-body compares it decompressed",
	"lost/truncated-request":     "a unary method is called with its whole request message: the message is length-prefixed and decoded before the method runs (grpc-go's generated handler decodes it first and returns the error), so a cut message never reaches a handler that could keep its key (TestGRPCCutMessageNeverRuns)",
}

// aepNever are the cases that run over gRPC but not for an AEP-155 key
// ({key, first_sent}), with why.
var aepNever = map[string]string{
	"expiry/fresh-after-ttl": "a key past its retention is refused by its first_sent, never fresh (security/invalid-format-rejected probes it)",
	"expiry/counted-from":    "a key past its retention is refused by its first_sent, never fresh: there is no moment it turns fresh to measure",
}

// fieldKeyNever are the cases that run over gRPC with a metadata key but
// not with a key in a message field (AIP-155, AEP-155), with why.
var fieldKeyNever = map[string]string{
	"syntax/repeated-header": "a field holds one key: there is no second one to send beside it",
}

// grpcSkip is why case id does not run over a gRPC target ("" when it
// does).
func grpcSkip(t *apispec.Target, id string) string {
	if t.IsGRPC() && t.Key != nil && t.Key.FirstSent && aepNever[id] != "" {
		return "does not apply to an AEP-155 key: " + aepNever[id]
	}
	if t.IsGRPC() && t.KeyField() != "" && fieldKeyNever[id] != "" {
		return "does not apply to a key in a message field: " + fieldKeyNever[id]
	}
	if !t.IsGRPC() || grpcReady[id] {
		return ""
	}
	for k, why := range grpcNever {
		if id == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(id, k)) {
			return "does not apply to gRPC: " + why
		}
	}
	return "not yet run over gRPC targets (docs/grpc.md lists the cases that are)"
}
