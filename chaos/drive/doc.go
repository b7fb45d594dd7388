// Package drive runs the chaos harness: an in-process fault proxy in front
// of a Target, N logical operations through it with a retrying client,
// then the exactly-once checker over the recorded history.
//
// It is a front end (the CLI's `idemcheck chaos`): it imports chaos, and
// reaches targets, requests and evidence through target, wire and
// evidence (with internal/jsonx), never through the engine: it must not
// depend on scenarios, nor on the reference server. internal/archtest
// checks this.
package drive
