// Package archtest holds no code: its test checks the house's dependency
// direction (docs/architecture.md; issue 25) against what `go list` says
// the packages import, as a table of rules each with the
// sentence it checks, and that every package keeps its package comment in
// doc.go. A rule broken by a new import fails `go test ./internal/archtest`
// with the chain of imports that breaks it.
//
// Only shipped code is judged: test files may use any fixture. The package
// imports nothing of idemcheck's and nothing imports it.
package archtest
