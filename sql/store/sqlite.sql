-- The results store in a SQLite file (the default, ./dbduel-results.db): the version in
-- PRAGMA user_version (as every store file since the first has it); no lock statement, since
-- the store's write transactions take SQLite's write lock at BEGIN (BEGIN IMMEDIATE), which is
-- what makes many processes opening a new store at once migrate it once.

-- name: words
id = INTEGER PRIMARY KEY
text = TEXT
key = TEXT
bytes = BLOB
table =
unhex = unhex(?)
reconnects = coalesce(json_extract(result, '$.reconnects'), 0)
restarts = coalesce(json_array_length(result, '$.server_restarts'), 0)
limiter = coalesce(json_extract(result, '$.verdict.limiter'), '')

-- Another sweep's commit, or its migrations, hold the write lock for a moment.
-- name: session
PRAGMA busy_timeout = 30000;

-- name: version
PRAGMA user_version;

-- name: version table

-- name: set version
PRAGMA user_version = {version};

-- name: lock

-- name: unlock

-- name: last id
SELECT last_insert_rowid();

-- name: migration 2 older runs
INSERT INTO run_metrics (run_id, name, value)
    SELECT runs.id, m.key, m.value FROM runs, json_each(runs.result, '$.workload.metrics') AS m
    WHERE m.type IN ('real', 'integer');
