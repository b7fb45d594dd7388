// Package load drives vegeta attacks that separate an idempotent API's
// replay (hit) path from its execute (miss) path, hammers hot keys
// (contention), checks correctness under load and gates on thresholds.
// It measures and judges into a Summary; reports/loadreport renders it
// (console, JSON, HTML, HDR plot).
// Every run's requests are built by wire.Build, handed out as vegeta
// Targets (vegetaTarget) and paced by vegeta's pacers on an open-model
// client of its own (paced.go), timed from each send's intended time: an
// HTTP target's requests are sent as built straight to the transport
// (direct.go), any other carrier's calls through the run's wire.Carrier
// (Do, as every other face sends). Either way the answers become vegeta
// Results: one collector, replay check, results file and report read
// them.
//
// It is a front end (the CLI's `idemcheck load`): it reaches targets,
// requests and evidence through apispec, wire and evidence, with
// internal/jsonx and internal/expiry, and must not depend on the engine
// (scenarios), the reference server or another front end
// (internal/archtest checks this).
package load
