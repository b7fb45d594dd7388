// Package reports writes a scenarios.Report for people and machines: a
// console tree, JUnit XML, versioned JSON, a Markdown CI summary, a
// self-contained HTML page, a shields.io badge and an in-toto attestation
// (with Verify to check one). Every writer shows the same verdicts: a case
// that failed shows its requirement sentence, expected vs observed, the
// exchanges and a curl reproduction.
//
// Every report idemcheck writes lives here: these, the conformance
// writers, in the package itself; the chaos writers in
// reports/chaosreport and the load writers in reports/loadreport; the
// words and HTML shell the three share, written once, in
// reports/internal/words and reports/internal/page. The conformance
// writers stay at the top rather than in reports/conformance: the CLI,
// idemchecktest and their tests import them by this name, and a move
// would rename each call and import for nothing, while
// the chaos and load writers, which need their engine's types, sit below
// without a cycle. The engines compute (scenarios, chaos, load) and never
// import a writer; the CLI wires them (internal/archtest checks that no
// package outside reports/ imports html/template or text/tabwriter).
//
// It reads the engine's results: it imports scenarios, and apispec and
// wire for the profile and the recorded exchanges they carry. It must not
// import cmd or a front end (suite, initconfig, load, chaos/drive); the CLI
// and idemchecktest import it.
package reports
