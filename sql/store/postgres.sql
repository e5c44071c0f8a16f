-- The results store in a PostgreSQL database (`--results postgres://...`) that several
-- machines share: the version in a table of its own; migrations and claims under an advisory
-- lock of the database, held to the end of their transaction.

-- name: words
id = BIGSERIAL PRIMARY KEY
text = TEXT
key = TEXT
bytes = BYTEA
table =
unhex = decode(?, 'hex')
reconnects = coalesce((result::jsonb ->> 'reconnects')::bigint, 0)
restarts = coalesce(jsonb_array_length(result::jsonb -> 'server_restarts'), 0)
limiter = coalesce(result::jsonb -> 'verdict' ->> 'limiter', '')

-- name: session

-- name: version
SELECT version FROM dbduel_store;

-- name: version table
CREATE TABLE IF NOT EXISTS dbduel_store (version BIGINT NOT NULL);

-- name: set version
DELETE FROM dbduel_store;
INSERT INTO dbduel_store (version) VALUES ({version});

-- name: lock
SELECT pg_advisory_xact_lock(4242424242);

-- name: unlock

-- name: last id
SELECT lastval();
