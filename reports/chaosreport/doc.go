// Package chaosreport writes a chaos run (drive.Result) and what the
// exactly-once checker found (chaos.Findings) for people and machines:
// the run's header lines and the console summary, the JSON form and a
// self-contained HTML page drawn from the run's history. The driver and
// the checker compute; this package only renders, beside the conformance
// writers in reports.
//
// It imports chaos (the findings and the history it reads), chaos/drive
// (the run's result) and the words and page shell shared under
// reports/internal; never the engine or the CLI, and neither chaos nor
// chaos/drive imports it: the CLI wires them (internal/archtest checks
// this).
package chaosreport
