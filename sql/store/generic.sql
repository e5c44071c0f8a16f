-- The results store (src/store/): its tables, made by the migrations in order (append a
-- migration, never edit one), and every statement that reads or writes them. Written once in
-- SQL that PostgreSQL, MariaDB/MySQL and SQLite all take; what differs is in a dialect's own
-- file, sql/store/<dialect>.sql, and an engine can hold a store exactly when its dialect has
-- one. A dialect file gives every section this file leaves to it (listed in
-- store::db::DIALECT_SECTIONS):
--   words        `name = text` lines put in for {name} in every statement: the column types
--                {id} (an integer key the database numbers), {text} (any length), {key} (text
--                that keys and unique constraints take), {bytes}, the table options {table},
--                {unhex} (bytes from a hex parameter), and the figures {reconnects},
--                {restarts} and {limiter} (the verdict's) read from a run's result JSON
--   session      run once on connecting
--   version      one row: the store's version (none: a new store)
--   version table, set version   where the version is kept
--   lock, unlock the store's lock, taken inside a transaction that migrates or claims a plan
--                (a lock statement that returns 0 did not get the lock), released after it
--   last id      the id the session's last INSERT was given
-- Column names are quoted where one is a keyword of a dialect ("repeat").

-- name: migration 1
CREATE TABLE plans (
    id {id},
    name {text} NOT NULL,
    text {text} NOT NULL,
    created_at {text} NOT NULL
){table};
CREATE TABLE runs (
    id {id},
    plan_id BIGINT NOT NULL REFERENCES plans(id),
    point_key {key} NOT NULL,
    engine {text} NOT NULL,
    profile {text} NOT NULL,
    unsafe_profile INTEGER NOT NULL,
    workload {text} NOT NULL,
    variant {text} NOT NULL,
    scale INTEGER NOT NULL,
    clients INTEGER NOT NULL,
    "repeat" INTEGER NOT NULL,
    cold INTEGER NOT NULL,
    cache_dropped INTEGER,
    started_at {text} NOT NULL,
    duration_s DOUBLE PRECISION NOT NULL,
    tps DOUBLE PRECISION NOT NULL,
    transactions BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    retries BIGINT NOT NULL,
    p50_ms DOUBLE PRECISION NOT NULL,
    p95_ms DOUBLE PRECISION NOT NULL,
    p99_ms DOUBLE PRECISION NOT NULL,
    max_ms DOUBLE PRECISION NOT NULL,
    client_cpu_s DOUBLE PRECISION NOT NULL,
    client_bound INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    server_version {text} NOT NULL,
    settings {text} NOT NULL,
    host {text} NOT NULL,
    database_size_bytes BIGINT NOT NULL,
    result {text} NOT NULL,
    UNIQUE (plan_id, point_key)
){table};
CREATE TABLE windows (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    transactions BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    retries BIGINT NOT NULL,
    p50_ms DOUBLE PRECISION,
    p99_ms DOUBLE PRECISION,
    PRIMARY KEY (run_id, t)
){table};
CREATE TABLE histograms (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    transaction_type {key} NOT NULL,
    hdr_v2 {bytes} NOT NULL,
    PRIMARY KEY (run_id, transaction_type)
){table};
CREATE TABLE resources (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    t INTEGER NOT NULL,
    sample {text} NOT NULL,
    PRIMARY KEY (run_id, t)
){table};

-- name: migration 2
CREATE TABLE run_metrics (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    name {key} NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, name)
){table};

-- The figures of the runs stored before run_metrics existed: only SQLite stores are that old
-- (sqlite.sql); a store of any other dialect was made with the table.
-- name: migration 2 older runs

-- name: migration 3
CREATE TABLE sweeps (
    plan_id BIGINT PRIMARY KEY REFERENCES plans(id),
    pid BIGINT NOT NULL,
    host {text} NOT NULL,
    process_start {text} NOT NULL,
    started_at {text} NOT NULL
){table};

-- The per-second p90 and p95, which `compare` resamples; empty for older runs.
-- name: migration 4
ALTER TABLE windows ADD COLUMN p90_ms DOUBLE PRECISION;
ALTER TABLE windows ADD COLUMN p95_ms DOUBLE PRECISION;

-- name: find plan
SELECT id FROM plans WHERE name = ? AND text = ?;

-- name: insert plan
INSERT INTO plans (name, text, created_at) VALUES (?, ?, ?);

-- name: holder
SELECT pid, host, process_start, started_at FROM sweeps WHERE plan_id = ?;

-- name: release
DELETE FROM sweeps WHERE plan_id = ? AND pid = ?;

-- name: forget holder
DELETE FROM sweeps WHERE plan_id = ?;

-- name: insert holder
INSERT INTO sweeps (plan_id, pid, host, process_start, started_at) VALUES (?, ?, ?, ?, ?);

-- name: done
SELECT point_key FROM runs WHERE plan_id = ?;

-- name: insert run
INSERT INTO runs (plan_id, point_key, engine, profile, unsafe_profile, workload, variant, scale, clients,
    "repeat", cold, cache_dropped, started_at, duration_s, tps, transactions, errors, retries, p50_ms, p95_ms,
    p99_ms, max_ms, client_cpu_s, client_bound, interrupted, server_version, settings, host,
    database_size_bytes, result)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: insert window
INSERT INTO windows (run_id, t, warmup, transactions, errors, retries, p50_ms, p90_ms, p95_ms, p99_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: insert histogram
INSERT INTO histograms (run_id, transaction_type, hdr_v2) VALUES (?, ?, {unhex});

-- name: insert figure
INSERT INTO run_metrics (run_id, name, value) VALUES (?, ?, ?);

-- name: insert resource
INSERT INTO resources (run_id, t, sample) VALUES (?, ?, ?);

-- name: same start
SELECT runs.id, plans.name, runs.result FROM runs JOIN plans ON plans.id = runs.plan_id
WHERE runs.started_at = ? AND runs.workload = ? ORDER BY runs.id;

-- {where} is empty, or a condition on plans.name with its one parameter.
-- name: list
SELECT runs.id, plans.name, engine, profile, unsafe_profile, workload, variant, scale, clients, "repeat", cold,
    started_at, duration_s, tps, p50_ms, p95_ms, p99_ms, errors, client_bound, server_version,
    {reconnects}, {restarts}, {limiter}
FROM runs JOIN plans ON plans.id = runs.plan_id {where} ORDER BY runs.id;

-- name: figures
SELECT run_id, name, value FROM run_metrics ORDER BY run_id;

-- name: plan names
SELECT name FROM plans GROUP BY name ORDER BY min(id);

-- name: result
SELECT result FROM runs WHERE id = ?;

-- The runs of the point run `id` belongs to (same plan, engine, profile, workload, variant,
-- scale, clients, cold or warm: its repeats), by repeat.
-- name: point runs
SELECT sibling.id FROM runs run JOIN runs sibling
    ON sibling.plan_id = run.plan_id AND sibling.engine = run.engine
    AND sibling.profile = run.profile AND sibling.workload = run.workload
    AND sibling.variant = run.variant AND sibling.scale = run.scale
    AND sibling.clients = run.clients AND sibling.cold = run.cold
WHERE run.id = ? ORDER BY sibling."repeat", sibling.id;

-- name: resources
SELECT sample FROM resources WHERE run_id = ? ORDER BY t;

-- (engine, profile, unsafe, settings JSON) from the newest run of each pair.
-- name: settings
SELECT engine, profile, unsafe_profile, settings FROM runs
WHERE runs.id IN (SELECT max(runs.id) FROM runs JOIN plans ON plans.id = runs.plan_id
                  {where} GROUP BY engine, profile)
ORDER BY engine, profile;
