// Package idemchecktest runs idemcheck's conformance catalog from go test,
// the way testing/slogtest checks a slog.Handler and testing/fstest an
// fs.FS: one call, one subtest per case instance (family/case@operation),
// and a failure that names the rule it breaks.
//
//	func TestIdempotency(t *testing.T) {
//		idemchecktest.Handler(t, myMiddleware(myAPI), idemchecktest.Config{Config: "idemcheck.yaml"})
//	}
//
// Run checks a server that already listens (Config.Target or the YAML
// config's base_url); Handler serves an http.Handler on a loopback
// httptest server and checks it, so a Go service tests its middleware
// with no process to start; GRPCServer does the same for a *grpc.Server
// (a gRPC target, docs/grpc.md), served on a loopback listener. A missing
// profile is the default, ietf.
//
// Every selected instance runs once, concurrently, in the engine
// (scenarios.Run); the subtests report what it concluded. go test's -run
// narrows what runs: an instance whose subtest is filtered out is not
// sent at all.
//
// How a verdict shows (Decide, the run-outcome rule of the CLI):
//   - fail, and a warn under Strict: the subtest fails with the spec
//     sentence, expected vs observed, every exchange and a curl
//     reproduction;
//   - a MUST-level instance without evidence (unverifiable, inconclusive)
//     fails unless AllowIncomplete; the CLI exits 5 for it;
//   - skip, and unverifiable/inconclusive below MUST: t.Skip with the
//     reason;
//   - warn outside Strict: passes, with the evidence logged;
//   - a known-failing instance that fails: t.Skip ("failed as expected");
//     one that passes fails, so the list cannot go stale.
//
// It is a front end: it imports the engine (scenarios), the target model
// (target) and reports (for the failure text every face shows); it must not
// import cmd, suite, initconfig, load or chaos/drive. suite builds on it.
package idemchecktest
