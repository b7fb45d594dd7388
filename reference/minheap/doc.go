// Package minheap keeps Go's collector from running while a server's heap
// is still small: below a floor it raises the collector's target so that
// the next collection waits until the heap reaches the floor, and above it
// leaves Go's default (GOGC=100) in charge.
//
// Go's default goal is twice the live heap, but at least 4 MB. A server
// whose binary links many libraries starts with over a megabyte of their
// package state live (idemcheck's: 1.4 MB, a quarter of it JSON Schema's
// meta-schemas, compiled at start-up for kin-openapi) and every request
// allocates, so under load the collector ran every thousand or so
// requests and marked all that state each time, work that is none of the
// request's. Held at 16 MB, it runs about every 5,000 replays; that costs
// at most 12 MB more heap, and a large heap (a memory store full of keys)
// is collected as Go would collect it. Measured in docs/performance.md.
//
// It imports nothing of idemcheck's: `idemcheck serve` and the replay floor
// it is benchmarked against (reference/internal/replayfloor) both use it,
// so the two run under one collector policy.
package minheap
