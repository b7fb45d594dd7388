// Package events is idemcheck's events evidence source: it counts the
// events an API under test publishes per idempotency key, read straight
// from the broker (Kafka, Redis Streams or NATS JetStream), so a run can
// tell whether every executed key published exactly one event — the
// transactional-outbox guarantee that no HTTP answer, row count or
// downstream call shows.
//
// A Reader opens at the position each stream has when it is opened (Kafka:
// the end offset of every partition; Redis: the last entry id; NATS: the
// last sequence) and sees only what is published after it. Each event is
// attributed to a key by a message header or by an RFC 6901 pointer into
// its JSON payload; with an event id pointer, a second delivery of one id
// is at-least-once delivery, listed but not counted as an execution.
// Events arrive late (an outbox relay polls), so Settle re-reads counts
// until they have not changed for the configured settle time, and says
// which never settled within its bound: such a count is inconclusive
// evidence, never a failure.
//
// Imports: the broker clients, evidence/eventspec (the events: section's
// Config it reads by) and idemcheck's internal helpers (internal/jsonx)
// only, never the engine (scenarios, apispec, wire) nor the reference
// server: the engine wires this package in, not the other way round.
// evidence imports it for the Reader (evidence.Events, the Source); the
// config model imports only eventspec, so that no broker client is in it.
package events
