-- SQLite: REAL for doubles (its affinity); ANALYZE takes the table as written.

-- name: type_double
REAL
