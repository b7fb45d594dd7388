// Package drive runs the chaos harness: an in-process fault proxy in front
// of a Target, N logical operations through it with a retrying client,
// then the exactly-once checker over the recorded history.
//
// With events: configured it holds, after the run, every key of the
// history to the events the API published (events.go): no lost event, no
// duplicated one.
//
// It is a front end (the CLI's `idemcheck chaos`): it imports chaos, and
// reaches targets, requests and evidence through target, wire and
// evidence (evidence/events for its settle bound; internal/jsonx), never
// through the engine: it must not
// depend on scenarios, nor on the reference server. internal/archtest
// checks this.
package drive
