// Package drive runs the chaos harness: an in-process fault proxy in front
// of a Target, N logical operations through it with a retrying client,
// then the exactly-once checker over the recorded history.
//
// With events: configured it holds, after the run, every key of the
// history to the events the API published (events.go): no lost event, no
// duplicated one.
//
// Its proxy is chaos/front's, the one the engine's lost-answer cases
// start, and every attempt is built and sent by that front's carrier
// (wire.Build underneath): the driver spells no key of its own.
//
// It is a front end (the CLI's `idemcheck chaos`): it imports chaos and
// chaos/front, and reaches targets, requests and evidence through
// apispec, wire and evidence (evidence/events for its settle bound;
// internal/jsonx), never through the engine: it must not
// depend on scenarios, nor on the reference server. internal/archtest
// checks this.
package drive
