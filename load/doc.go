// Package load drives vegeta attacks that separate an idempotent API's
// replay (hit) path from its execute (miss) path, hammers hot keys
// (contention), checks correctness under load and gates on thresholds.
// It measures and judges into a Summary; reports/loadreport renders it
// (console, JSON, HTML, HDR plot).
// An HTTP target's requests are built by wire.Build and sent by vegeta
// through one adapter (vegetaTarget); a gRPC target's calls run on a
// paced open-model client of its own (paced.go) that sends them through
// the run's wire.Carrier (Do, as every other face sends) and makes
// vegeta Results of its answers, behind the same attacker seam: one
// collector, replay check, results file and report read either.
//
// It is a front end (the CLI's `idemcheck load`): it reaches targets,
// requests and evidence through apispec, wire and evidence, with
// internal/jsonx and internal/expiry, and must not depend on the engine
// (scenarios), the reference server or another front end
// (internal/archtest checks this).
package load
