-- SmallBank's SendPayment as dbduel's smallbank runs it, in pgbench's format (see amalgamate.sql): 5.00 from the
-- first customer's checking to the second's, rolled back when the first holds less.
\set a random(0, :customers - 1)
\set b (:a + 1 + random(0, :customers - 2)) % :customers
BEGIN;
SELECT custid, name FROM accounts WHERE custid = :a;
SELECT custid, name FROM accounts WHERE custid = :b;
SELECT bal FROM checking WHERE custid = :a \gset
\if :bal < 500
ROLLBACK;
\else
UPDATE checking SET bal = bal - 500 WHERE custid = :a;
UPDATE checking SET bal = bal + 500 WHERE custid = :b;
COMMIT;
\endif
