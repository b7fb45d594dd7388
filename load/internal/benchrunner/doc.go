// Command benchrunner measures the load runner's own ceiling: the highest
// rate `idemcheck load` sustains, beside a bare vegeta library attack with
// the same settings, alternated round by round so both see the same
// machine load: in nokey mode against a trivial handler, in hit mode
// against the reference server replaying a pool of keys. With -grpc it
// compares the paced gRPC client with a bare grpc-go loop (the generated
// client) on the reference gRPC service instead. The server runs in a
// child process so the client CPU per request can be measured too; -pprof
// writes a CPU profile of each side's first measured round.
//
// It imports load (the runner under measurement), apispec (to describe
// the targets), wire (the bare loop's transport, the runner's own), and
// reference/demo, reference/grpcref and
// reference/memstore (the servers of its child process, and the bare
// loop's generated gRPC client).
package main
