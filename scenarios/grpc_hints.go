package scenarios

import "github.com/idemcheck/idemcheck/apispec"

// The config a need asks for, in a gRPC target's terms: a message field
// or the downstream double where an HTTP API takes a body, code names
// where it takes statuses, an absolute oracle URL (a gRPC target has no
// HTTP base), metadata where it takes headers. A need without an entry
// here is written the same for both.

// grpcConfigHints are ConfigHint's lines for a gRPC target.
var grpcConfigHints = map[Need]string{
	NeedOracle:          "oracle: {url: http://127.0.0.1:8080/effects?key={key}, pointer: /executions} (absolute: a gRPC target has no HTTP base; or oracle: {downstream: ROUTE}, the double the service calls)",
	NeedEffects:         "oracle: {url: http://127.0.0.1:8080/effects?key={key}, pointer: /executions} (absolute; or oracle: {downstream: ROUTE}, or the operation's id_pointer: /name)",
	NeedIDPointer:       "operations[].id_pointer: /name (in the OK answer's protojson)",
	NeedSecondPrincipal: "principals: a second entry, e.g. {name: bob, metadata: {authorization: Bearer ${BOB_TOKEN}}}",
	NeedSecondOperation: "operations: a second key-accepting RPC (rpc: package.Service/Method)",
	NeedSlow:            "operations[].variants.slow: {downstream: {route: payments, delay: 1500ms}, duration: 1500ms} (the downstream double holds the service's call; or patch: a message field that keeps the handler busy)",
	NeedBusinessError:   "operations[].variants.business_error: {downstream: {route: payments, status: 402}, status: FAILED_PRECONDITION} (the double declines; or patch: a message field the service refuses as an outcome)",
	NeedTransientError:  "operations[].variants.transient_error: {downstream: {route: payments, status: 503}, status: UNAVAILABLE} (the double fails; or patch: a message field that makes the service fail)",
	NeedInvalid:         "operations[].variants.invalid: {patch: {amount: -1}, status: INVALID_ARGUMENT} (a message field value the service rejects as invalid)",
	NeedLarge:           "operations[].variants.large: {patch: {pad_bytes: 1048576}} (a message field whose OK answer is at least 1 MiB)",
	NeedCrash:           "operations[].variants.crash: {patch: {fail: crash}, status: INTERNAL} (a message field that makes the handler crash)",
	NeedTimeout:         "operations[].variants.timeout: {downstream: {route: payments, delay: 60s}, status: DEADLINE_EXCEEDED} (the double answers later than the service waits; or patch: a message field that makes the handler time out)",
	NeedReplicas:        "replicas: [grpc://replica-a:50051, grpc://replica-b:50051] (or --replica grpc://host:port, repeated)",
}

// grpcNeedFixes are needFixes' lines for a gRPC target.
var grpcNeedFixes = map[Need]string{
	NeedOracle:          "add oracle: (sql:, an absolute list or counter url), downstream: or events: to count executions (docs/evidence.md)",
	NeedEffects:         "add oracle: (sql:, an absolute list or counter url), downstream:, events: or id_pointer: to count executions (docs/evidence.md)",
	NeedIDPointer:       "add id_pointer: the created resource's name or id in the OK answer's protojson",
	NeedSecondPrincipal: "add a second principal (principals: with its own metadata)",
	NeedSecondOperation: "add a second operation (another RPC)",
	NeedSlow:            "add a slow variant (variants.slow: a message field, or the downstream double's delay, that keeps the call in flight)",
	NeedBusinessError:   "add a business_error variant (a message field or a downstream answer that makes the service fail with an outcome code, e.g. FAILED_PRECONDITION)",
	NeedTransientError:  "add a transient_error variant (a message field or a downstream answer that makes the service fail with a server code, e.g. UNAVAILABLE)",
	NeedInvalid:         "add an invalid variant (a message the service rejects as invalid, e.g. INVALID_ARGUMENT)",
	NeedTargetCmd:       "add target_cmd: a command that starts the service (the harness kills and restarts it)",
	NeedReplicas:        "add replicas: two or more grpc:// addresses of one service",
}

// carrierHints and carrierFixes are the hints and fixes of each carrier
// (by its name, Carrier.Name, as a report's Protocol says it) whose
// config spells a need otherwise.
var (
	carrierHints = map[string]map[Need]string{"gRPC": grpcConfigHints}
	carrierFixes = map[string]map[Need]string{"gRPC": grpcNeedFixes}
)

// ConfigHintFor is n's ConfigHint for a target reached over the carrier
// named carrier (CarrierName).
func (n Need) ConfigHintFor(carrier string) string {
	if h, ok := carrierHints[carrier][n]; ok {
		return h
	}
	return n.ConfigHint()
}

// needFix is how a config supplies n, for a target reached over the
// carrier named carrier ("" when needFixes has nothing for it).
func needFix(n Need, carrier string) string {
	if f, ok := carrierFixes[carrier][n]; ok {
		return f
	}
	return needFixes[n]
}

// CarrierName is the name of t's carrier (wire.Carrier.Name).
func CarrierName(t *apispec.Target) string { return carrierOf(t).Name() }
