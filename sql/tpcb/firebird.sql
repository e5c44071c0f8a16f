-- Firebird 3: no DROP TABLE IF EXISTS (an EXECUTE BLOCK looks in the catalogue first), no
-- FROM-less SELECT (RDB$DATABASE is the one-row table), and SET STATISTICS recomputes each
-- index's selectivity instead of ANALYZE. Each EXECUTE BLOCK stays on one line.

-- name: drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PGBENCH_HISTORY')) THEN EXECUTE STATEMENT 'DROP TABLE pgbench_history'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PGBENCH_TELLERS')) THEN EXECUTE STATEMENT 'DROP TABLE pgbench_tellers'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PGBENCH_ACCOUNTS')) THEN EXECUTE STATEMENT 'DROP TABLE pgbench_accounts'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PGBENCH_BRANCHES')) THEN EXECUTE STATEMENT 'DROP TABLE pgbench_branches'; END;

-- name: partitions_refused
Firebird has no partitioned tables: drop --partitions

-- name: unlogged_refused
Firebird has no unlogged tables: drop --unlogged-tables (its nearest is forced writes off, a database setting that is not durable)

-- name: tablespaces_refused
Firebird 3 has no tablespaces: drop --tablespace and --index-tablespace (a database is its file: put it where you want with the DSN's path)

-- name: generate
DELETE FROM pgbench_history;
DELETE FROM pgbench_accounts;
DELETE FROM pgbench_tellers;
DELETE FROM pgbench_branches;
EXECUTE BLOCK AS DECLARE i INT = 1; BEGIN WHILE (i <= {branches}) DO BEGIN INSERT INTO pgbench_branches (bid, bbalance) VALUES (:i, 0); i = i + 1; END END;
EXECUTE BLOCK AS DECLARE i INT = 1; BEGIN WHILE (i <= {tellers}) DO BEGIN INSERT INTO pgbench_tellers (tid, bid, tbalance) VALUES (:i, (:i - 1) / 10 + 1, 0); i = i + 1; END END;
EXECUTE BLOCK AS DECLARE i BIGINT = 1; BEGIN WHILE (i <= {accounts}) DO BEGIN INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (:i, (:i - 1) / 100000 + 1, 0, ''); i = i + 1; END END;

-- name: analyze
EXECUTE BLOCK AS DECLARE i VARCHAR(63); BEGIN FOR SELECT TRIM(RDB$INDEX_NAME) FROM RDB$INDICES WHERE RDB$RELATION_NAME STARTING WITH 'PGBENCH_' INTO :i DO EXECUTE STATEMENT 'SET STATISTICS INDEX "' || i || '"'; END

-- name: sums
SELECT (SELECT COALESCE(SUM(abalance), 0) FROM pgbench_accounts),
       (SELECT COALESCE(SUM(tbalance), 0) FROM pgbench_tellers),
       (SELECT COALESCE(SUM(bbalance), 0) FROM pgbench_branches),
       (SELECT COALESCE(SUM(delta), 0) FROM pgbench_history)
FROM RDB$DATABASE

-- name: counts
SELECT (SELECT count(*) FROM pgbench_branches),
       (SELECT count(*) FROM pgbench_tellers),
       (SELECT count(*) FROM pgbench_accounts)
FROM RDB$DATABASE
