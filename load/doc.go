// Package load drives vegeta attacks that separate an idempotent API's
// replay (hit) path from its execute (miss) path, hammers hot keys
// (contention), checks correctness under load and gates on thresholds.
// A gRPC target's calls run on a paced open-model client of its own
// (paced.go) behind the same attacker seam, with the same results.
//
// It is a front end (the CLI's `idemcheck load`): it reaches targets,
// requests and evidence through target, wire and evidence, with
// internal/jsonx and internal/expiry, and must not depend on the engine
// (scenarios), the reference server or another front end. One exception
// stands today: bodyhash.go calls scenarios.ReplayForm (what a replay's
// body must repeat); internal/archtest lists it as known and fails once it
// is gone, so the rule then holds strictly.
package load
