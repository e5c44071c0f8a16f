-- SQLite: an INTEGER primary key is the rowid, numbered after the largest id by itself.

-- name: id_def
INTEGER

-- name: after_load

-- SQLite has no sequences: a one-row counter table, advanced and read in one statement.
-- name: create_sequence
CREATE TABLE IF NOT EXISTS dbduel_seq (v INTEGER NOT NULL);
INSERT INTO dbduel_seq (v) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM dbduel_seq);

-- name: drop_sequence
DROP TABLE IF EXISTS dbduel_seq

-- name: probe_sequence
UPDATE dbduel_seq SET v = v + 1 RETURNING v

-- integrity_check on one table verifies its B-trees and that each index matches the rows.
-- name: index_check_setup

-- name: index_check
PRAGMA integrity_check(sbtest{n})
