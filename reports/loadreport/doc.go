// Package loadreport writes a load run's summary (load.Summary) for people
// and machines: the console table, the JSON form (schema
// idemcheck.load/v1, docs/load.md), a self-contained HTML page with the
// latency over time per path (load.TimePlot), and the HDR percentile plot
// as SVG. load measures and judges; this package only renders, beside the
// conformance writers in reports.
//
// It imports load (the summary it renders) and
// the words and page shell shared under reports/internal; never the
// engine or the CLI, and load never imports it: the CLI wires the two
// (internal/archtest checks this).
package loadreport
