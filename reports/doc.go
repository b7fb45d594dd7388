// Package reports writes a scenarios.Report for people and machines: a
// console tree, JUnit XML, versioned JSON, a Markdown CI summary, a
// self-contained HTML page, a shields.io badge and an in-toto attestation
// (with Verify to check one). Every writer shows the same verdicts: a case
// that failed shows its requirement sentence, expected vs observed, the
// exchanges and a curl reproduction.
//
// It reads the engine's results: it imports scenarios, and target and wire
// for the profile and the recorded exchanges they carry. It must not import
// cmd or a front end (suite, initconfig, load, chaos/drive); the CLI and
// idemchecktest import it.
package reports
