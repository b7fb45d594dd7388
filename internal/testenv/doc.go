// Package testenv starts real PostgreSQL, Redis and MySQL (MariaDB) servers,
// Kafka brokers (kafka.go: an in-process kfake cluster unless
// IDEMCHECK_KAFKA_BROKERS names one; redpanda.go: a Redpanda container where
// Docker answers) and NATS servers (nats.go: nats-server with JetStream
// embedded in the test binary unless IDEMCHECK_NATS_URL names one) for
// tests; the servers in this order:
// an explicit address from the environment (IDEMCHECK_PG_DSN,
// IDEMCHECK_REDIS_URL, IDEMCHECK_MYSQL_DSN), Docker through
// testcontainers-go (probed once, with a timeout; not for MySQL), local
// server binaries in a temp dir, and otherwise reports why none was
// available so the caller can skip. Under IDEMCHECK_REQUIRE_STORES=1 (CI) a
// missing server is a test failure, never a skip.
//
// Test binaries share one server per kind: Main starts nothing itself but
// stops whatever RequirePostgres/RequireRedis/RequireMySQL started, and each
// test gets its own schema (PostgreSQL), key prefix (Redis) or database
// (MySQL) so tests stay independent.
//
// Of idemcheck's packages it imports only internal/freeport; it must not
// import the reference server, so that reference's own tests can use it.
// Only tests and scripts/pgserver import it.
package testenv
