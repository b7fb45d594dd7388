// Package load drives vegeta attacks that separate an idempotent API's
// replay (hit) path from its execute (miss) path, hammers hot keys
// (contention), checks correctness under load and gates on thresholds.
// It measures and judges into a Summary; reports/loadreport renders it
// (console, JSON, HTML, HDR plot).
// A gRPC target's calls run on a paced open-model client of its own
// (paced.go) behind the same attacker seam, with the same results.
//
// It is a front end (the CLI's `idemcheck load`): it reaches targets,
// requests and evidence through apispec, wire and evidence, with
// internal/jsonx and internal/expiry, and must not depend on the engine
// (scenarios), the reference server or another front end
// (internal/archtest checks this).
package load
