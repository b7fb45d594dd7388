// Package scenarios is the conformance engine and its catalog: Env (one
// case instance's view of the target: it sends requests through the wire,
// counts executions through the evidence and keeps every exchange), the
// run loop (Plan, Run: calibration, attempts, parallelism), judging
// (verdicts, the time and overlap rules), results, the run's outcome and
// its conformance level.
//
// The catalog is one file per family (cases_*.go, h2spec style): each
// holds its cases — the requirement sentence, the level, what it needs —
// and their run functions only. The toolkit they share lives in the
// engine's files: overlaps and bursts (overlap.go, burst.go, lastbyte.go),
// replays (replay.go), mismatches (mismatch.go), scope (scope.go), keys
// (keys.go), failures (failures.go), expiry (expiry.go), the proxy for
// lost answers (proxied.go), problem documents (problems.go), counting
// (count.go), calibration (calibrate.go) and the published events the
// outbox/ cases judge (outbox.go).
//
// It may import target, wire, evidence, chaos (the proxy for the lost/
// family) and internal/ packages. It must not import Ginkgo, reports or
// any front end (cmd, suite, idemchecktest, initconfig): they import it.
package scenarios
