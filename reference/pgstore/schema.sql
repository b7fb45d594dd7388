-- idemcheck PostgreSQL store schema. Every statement is idempotent: Open
-- runs it on a start that finds an object missing (pgstore.go
-- schemaCurrent: keep it in step), under an advisory lock so concurrent
-- starts do not race on the catalog.
CREATE TABLE IF NOT EXISTS idempotency_records (
    principal    text        NOT NULL,
    method       text        NOT NULL,
    path         text        NOT NULL,
    key          text        NOT NULL,
    state        smallint    NOT NULL,          -- 1 in flight, 2 completed
    fingerprint  text        NOT NULL,
    token        text        NOT NULL,          -- owner of the claim; fences completion
    status       integer,
    header       bytea,                         -- JSON of the allow-listed headers
    body         bytea,
    created_at   timestamptz NOT NULL,
    locked_until timestamptz NOT NULL,          -- lease end while in flight
    expires_at   timestamptz NOT NULL,          -- TTL end
    PRIMARY KEY (principal, method, path, key)
);
-- SHA-256 of the claiming request's body bytes (added after the first
-- release; rows from before it carry '' and are matched by fingerprint).
ALTER TABLE idempotency_records ADD COLUMN IF NOT EXISTS raw_hash text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS idempotency_records_expires_at ON idempotency_records (expires_at);

-- The demo app's effects. Written in the same transaction as the record's
-- completion, so a charge never exists without its stored response.
CREATE TABLE IF NOT EXISTS charges (
    id              text        PRIMARY KEY,
    object          text        NOT NULL,
    principal       text        NOT NULL,
    amount          bigint      NOT NULL,
    currency        text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    idempotency_key text        NOT NULL DEFAULT '',
    created         timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS charges_principal_key ON charges (principal, idempotency_key);
-- What the request's query and API version chose (added later: rows from
-- before carry NULL and '').
ALTER TABLE charges ADD COLUMN IF NOT EXISTS captured boolean;
ALTER TABLE charges ADD COLUMN IF NOT EXISTS api_version text NOT NULL DEFAULT '';

-- The outbox: events written in the transaction of the outcome they belong
-- to, published afterwards by a relay (reference/outbox). A relay claims
-- rows for a lease, so two replicas' relays do not publish one row twice
-- while both live; sent rows are deleted by the cleanup after a while.
CREATE TABLE IF NOT EXISTS outbox (
    seq           bigserial   PRIMARY KEY,
    id            text        NOT NULL UNIQUE,
    key           text        NOT NULL,
    type          text        NOT NULL,
    payload       bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    claimed_until timestamptz,
    sent_at       timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (seq) WHERE sent_at IS NULL;
