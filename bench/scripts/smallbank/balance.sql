-- SmallBank's Balance as dbduel's smallbank runs it, in pgbench's format (see amalgamate.sql): the customer found by
-- name (dbduel's names are the id written in 64 digits), then both balances read.
\set a random(0, :customers - 1)
BEGIN;
SELECT custid FROM accounts WHERE name = lpad(CAST(:a AS text), 64, '0') \gset
SELECT bal FROM savings WHERE custid = :custid;
SELECT bal FROM checking WHERE custid = :custid;
COMMIT;
