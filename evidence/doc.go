// Package evidence answers "did it execute, and how often?" from outside
// the API: the Source interface and one file per source (an HTTP counter,
// a list endpoint, a SQL query, the downstream double's journal), opened
// together per run as Evidence, and the run's double (Downstream): it
// marks each key's requests with a token, makes variants behave, counts
// calls per key or globally once calibration finds them untokened
// (Check, Untokened, Global), witnesses keyless executions and describes
// a key's calls for the report (Lines).
//
// The engine, chaos and load ask Evidence and Downstream; nothing outside
// this package reads a source's or the double's internals, or knows which
// source is configured. evidence/double is the double server itself;
// evidence/events reads the events an API publishes, and Events
// (events_source.go) makes it a Source: the run's oracle when no oracle
// is configured, else beside the others (Evidence.Events), never summed
// with them.
//
// It may import apispec, wire, evidence/double, evidence/events and
// internal/ packages. It must not import scenarios or any front end.
package evidence
