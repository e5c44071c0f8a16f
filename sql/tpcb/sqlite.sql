-- SQLite: ALTER TABLE cannot add a primary key, so keys are declared at creation, as
-- INTEGER PRIMARY KEY (the rowid: rows are stored in key order, as SQLite users define it).

-- name: create
CREATE TABLE pgbench_history (tid int, bid int, aid {aid_type}, delta int, mtime timestamp, filler char(22));
CREATE TABLE pgbench_tellers (tid INTEGER PRIMARY KEY, bid int, tbalance int, filler char(84));
CREATE TABLE pgbench_branches (bid INTEGER PRIMARY KEY, bbalance int, filler char(88));

-- name: create_accounts
CREATE TABLE pgbench_accounts (aid INTEGER PRIMARY KEY, bid int, abalance int, filler char(84));

-- name: partitions_refused
SQLite has no partitioned tables: drop --partitions

-- name: primary_keys

-- name: foreign_keys_refused
SQLite enforces foreign keys only on connections that turn them on (PRAGMA foreign_keys) and cannot add one to a table it made: drop --foreign-keys, or use PostgreSQL, MariaDB/MySQL (InnoDB) or Firebird

-- name: unlogged_refused
SQLite has no unlogged tables: drop --unlogged-tables (its nearest is synchronous=OFF, which is not durable)

-- name: tablespaces_refused
SQLite has no tablespaces: drop --tablespace and --index-tablespace (a database is one file: put it where you want with the DSN's path)

-- name: generate
DELETE FROM pgbench_history;
DELETE FROM pgbench_accounts;
DELETE FROM pgbench_tellers;
DELETE FROM pgbench_branches;
INSERT INTO pgbench_branches (bid, bbalance) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {branches}) SELECT i, 0 FROM s;
INSERT INTO pgbench_tellers (tid, bid, tbalance) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {tellers}) SELECT i, (i - 1) / 10 + 1, 0 FROM s;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {accounts}) SELECT i, (i - 1) / 100000 + 1, 0, '' FROM s;

-- name: analyze
ANALYZE;
