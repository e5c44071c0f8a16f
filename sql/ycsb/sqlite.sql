-- SQLite: a WITHOUT ROWID table, stored in key order as InnoDB stores it; length() counts
-- characters.

-- name: create
CREATE TABLE {table} (YCSB_KEY varchar(255) NOT NULL PRIMARY KEY, {columns}) WITHOUT ROWID;

-- name: analyze
ANALYZE;

-- name: length_of
length
