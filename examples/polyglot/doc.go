// Package polyglot holds two payment APIs written in other languages than
// idemcheck's, without its code: node/server.js (plain node:http: raw-token
// keys, a PATCH update whose answers share one id and carry a version, a
// capture action on an existing charge, plain JSON errors, a replay marker,
// a session cookie a replay never repeats) and python/server.py (stdlib
// ThreadingHTTPServer: sf-string keys that are optional, 409 for a reused
// key, integer ids per table, a stored 402 replayed byte for byte, TTL
// counted from completion). Each also has broken builds behind DEFECT.
//
// polyglot_test.go starts each build as a real process on a free loopback
// port, reads the hand-written config in testdata/ as a newcomer would
// write it, and runs the catalog: the correct builds must get no fail and
// no warn under --strict, each broken one must fail on the case that names
// its defect.
package polyglot
