// Command benchrunner measures the load runner's own ceiling: the highest
// rate `idemcheck load` sustains, beside a bare vegeta library attack with
// the same settings, alternated round by round so both see the same
// machine load: in nokey mode against a trivial handler, in hit mode
// against the reference server replaying a pool of keys. The server runs
// in a child process so the client CPU per request can be measured too.
//
// It imports load (the runner under measurement), target and wire (to build
// the same requests), and reference/demo (the server it runs in its child
// process); through load it reaches the engine too, until load stops
// depending on scenarios.
package main
