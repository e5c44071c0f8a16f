-- pgbench's built-in "tpcb-like" transaction in pipeline mode: the same statements, sent without
-- waiting for each reply, read back at \endpipeline (PostgreSQL 14 and later; -M prepared).
-- pgbench -f and dbduel run take it as it is; on MariaDB, Firebird and SQLite dbduel sends the
-- statements one at a time (they have no pipeline mode).
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
\startpipeline
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
\endpipeline
