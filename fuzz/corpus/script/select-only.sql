-- pgbench's built-in "select-only" transaction as a custom script.
\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
