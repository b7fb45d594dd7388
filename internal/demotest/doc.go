// Package demotest serves the reference demo app on a loopback httptest
// server for other packages' tests. It is apart from internal/testenv so
// that reference's own in-package tests may use testenv without an import
// cycle through reference/demo.
//
// Of idemcheck's packages it imports only reference/demo, and for the
// gRPC reference beside it reference, reference/grpcref and
// reference/memstore. It is a test
// fixture above the reference server: apispec, wire, evidence and chaos must
// never reach it; only tests import it.
package demotest
