-- sysbench 1.0.20's OLTP schema and statements (src/lua/oltp_common.lua, select_random_*.lua).
-- {n} is the table number; {id_def} the id column's definition; {options} the table options.

-- name: drop
DROP TABLE IF EXISTS sbtest{n}

-- name: create
CREATE TABLE sbtest{n} (id {id_def}, k INTEGER DEFAULT 0 NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)){options}

-- name: id_def
SERIAL

-- name: secondary_index
CREATE INDEX k_{n} ON sbtest{n}(k)

-- Rows are loaded with explicit ids 1..table_size (as auto-increment would number them), so
-- the id sequence must be moved past them.
-- name: after_load
SELECT setval('sbtest{n}_id_seq', (SELECT max(id) FROM sbtest{n}))

-- name: point_select
SELECT c FROM sbtest{n} WHERE id=?

-- name: simple_range
SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ?

-- name: sum_range
SELECT SUM(k) FROM sbtest{n} WHERE id BETWEEN ? AND ?

-- name: order_range
SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c

-- name: distinct_range
SELECT DISTINCT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c

-- name: index_update
UPDATE sbtest{n} SET k=k+1 WHERE id=?

-- name: non_index_update
UPDATE sbtest{n} SET c=? WHERE id=?

-- name: delete
DELETE FROM sbtest{n} WHERE id=?

-- name: insert
INSERT INTO sbtest{n} (id, k, c, pad) VALUES (?, ?, ?, ?)

-- name: insert_auto
INSERT INTO sbtest{n} (k, c, pad) VALUES (?, ?, ?)

-- name: random_points
SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({marks})

-- name: random_ranges
SELECT count(k) FROM sbtest1 WHERE {ranges}

-- name: shape
SELECT count(*), count(DISTINCT id), COALESCE(SUM(CASE WHEN k IS NULL THEN 1 ELSE 0 END), 0) FROM sbtest{n}

-- Index consistency: every statement of index_check must succeed and the last column of
-- the last row must say "ok". PostgreSQL: amcheck verifies both B-trees' structure and that
-- every heap row is in them (heapallindexed).
-- name: index_check_setup
CREATE EXTENSION IF NOT EXISTS amcheck

-- name: index_check
SELECT 'ok' FROM (SELECT bt_index_check('sbtest{n}_pkey'::regclass, true), bt_index_check('k_{n}'::regclass, true)) AS checked

-- The probes (seed 004's and seed 001's micro-benchmarks), on sbtest1 and sbtest2.
-- name: probe_select1
SELECT 1

-- name: probe_select1_x10
SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1; SELECT 1

-- name: probe_point
SELECT c FROM sbtest1 WHERE id = ?

-- name: probe_in10
SELECT c FROM sbtest1 WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: probe_range
SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?

-- name: probe_scan
SELECT count(*) FROM sbtest1 WHERE c LIKE '%99999-%'

-- name: probe_join
SELECT count(*) FROM sbtest1 a JOIN sbtest2 b ON b.id = a.k WHERE a.id BETWEEN ? AND ?

-- name: probe_correlated
SELECT count(*) FROM sbtest1 a WHERE a.id BETWEEN ? AND ? AND a.k > (SELECT avg(b.k) FROM sbtest2 b WHERE b.id BETWEEN a.id AND a.id + 10)

-- name: probe_in_subquery
SELECT count(*) FROM sbtest1 WHERE id IN (SELECT k FROM sbtest2 WHERE id BETWEEN ? AND ?)

-- name: create_sequence
CREATE SEQUENCE IF NOT EXISTS dbduel_seq

-- name: drop_sequence
DROP SEQUENCE IF EXISTS dbduel_seq

-- name: probe_sequence
SELECT nextval('dbduel_seq')
