// Package chaosreport writes what the exactly-once checker found
// (chaos.Findings) for people and machines: the console summary, the JSON
// form and a self-contained HTML page drawn from the run's history. The
// checker computes; this package only renders, beside the conformance
// writers in reports.
//
// It imports chaos (the findings and the history it reads) and the words
// and page shell shared under reports/internal; never the driver
// (chaos/drive), the engine or the CLI, and chaos never imports it: the CLI
// wires the two (internal/archtest checks this).
package chaosreport
