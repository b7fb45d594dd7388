// Package scenarios is the conformance engine and its catalog: Env (one
// case instance's view of the target: it sends every request through the
// run's one carrier (wire.Carrier),
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
// (keys.go), failures (failures.go), expiry (expiry.go), the fault proxy
// for lost answers over every carrier (proxied.go, chaos/front), where a
// case does not apply (applies.go: Case.Unfit asks the carrier's
// capabilities, never its name), problem documents (problems.go), counting
// (count.go), calibration (calibrate.go) and the published events the
// outbox/ cases judge (outbox.go).
//
// It may import apispec, wire, evidence, chaos and chaos/front (the proxy
// for the lost/ family) and internal/ packages. It must not import Ginkgo, reports or
// any front end (cmd, suite, idemchecktest, initconfig): they import it.
package scenarios
