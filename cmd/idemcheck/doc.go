// Command idemcheck certifies that an HTTP API's Idempotency-Key support
// really works: conformance suite, chaos harness, load runner and the
// reference implementation they are measured against.
//
// It is a thin cobra CLI, one file per subcommand: flags in, library calls,
// an exit code out. It sits on top and may import any package of
// idemcheck's (the engine, the front ends, the reference server and its
// stores, reports); nothing imports it. Work that a library user could
// want belongs in a package, not here.
package main
