// Package outbox publishes the reference's events: a Relay moves the
// events an EventStore keeps in its outbox (stored with their outcomes) to
// a broker, and Open connects to one by URL:
//
//	kafka://HOST:PORT[,HOST:PORT...]/TOPIC
//	redis://[:PASSWORD@]HOST:PORT/DB?stream=NAME
//	nats://[USER:PASSWORD@]HOST:PORT/STREAM?subject=SUBJECT
//
// (NATS: a JetStream stream, created holding SUBJECT when no stream holds
// it; SUBJECT defaults to the stream's name.) Every event carries its
// idempotency key and its id twice: as headers (idempotency-key,
// event-id, event-type; a Redis entry's fields) and in
// its JSON payload, so a consumer can attribute and dedupe it either way.
//
// Of idemcheck's packages it imports only reference.
package outbox
