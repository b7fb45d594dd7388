// Package eventspec is the events: section of a run config: its types
// (Config, Kafka, NATS, Redis, Key), their defaults and their one
// validation with one-line errors naming the field.
//
// It is apart from evidence/events, the reader, so that the config model
// (apispec) can embed the section without pulling in the broker clients
// (franz-go, go-redis, nats.go) that the reader needs. It imports nothing
// of idemcheck's but internal/jsonx.
package eventspec
