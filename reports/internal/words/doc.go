// Package words holds the words and number formats every report writer
// shares (the conformance writers in reports, reports/chaosreport and
// reports/loadreport), written once so that the three reports say a thing
// the same way: a run's length, a tally, the JSON form, the verdict words.
//
// It imports nothing of idemcheck's; only the packages under reports/ may
// import it (Go's internal rule).
package words
