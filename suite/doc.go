// Package suite is the Ginkgo v2 face of the conformance catalog: a
// Describe per family and an It per case instance (case@operation), fed
// by one concurrent engine run (scenarios.Run) before the specs assert.
//
//	go test ./suite                              # against the in-process reference demo app
//	go test ./suite -args -config=examples/orders.yaml
//	go tool ginkgo ./suite -- -target=http://127.0.0.1:8080 -strict
//
// The package's non-test file holds the Gomega matcher (Conform); each It
// reads its result with idemchecktest.Decide, the CLI's rule; how a
// target is selected is scenarios.Selection, shared with the CLI.
//
// It is a front end: of idemcheck's packages it imports only scenarios and
// idemchecktest (its tests also use reports, apispec, wire and the
// reference demo app); it must not import cmd or another front end, and
// nothing imports it.
package suite
