// Command pgserver runs a PostgreSQL server for scripts/bench-stores.sh the
// way the tests get one (internal/testenv: IDEMCHECK_PG_DSN, Docker, or the
// local binaries), prints "DSN PID" (PID: the postmaster, leader of the
// server's process group, or 0 when unknown) and keeps it until its stdin
// closes. -fsync on|off sets fsync and synchronous_commit on a running
// server (-dsn) instead.
//
// Of idemcheck's packages it imports only internal/testenv.
package main
