// Command replayfloor is the cost floor of a replay served by net/http: an
// http.Server with the timeouts of `idemcheck serve` whose handler reads the
// request body and writes one fixed stored response (a replayed charge: its
// status, headers and bytes), with no routing, authentication, key parsing,
// hashing or store lookup. scripts/bench-reference.sh measures it beside the
// reference's hit and keyless paths: no replay inside net/http can cost less
// CPU per request, or answer faster, than this server does.
//
// It imports nothing of idemcheck's but reference/minheap: it is the floor,
// so it shares no code with what it is compared to except serve's collector
// policy, which it runs under too (a floor at Go's default collector would
// measure the two policies, not the two answers). Its test does: the
// floor's answer must have the reference replay's status, header fields
// and body size (it had drifted to four fields and 129 bytes while the
// replay grew to seven and 144: a floor below what any replay must write).
package main
