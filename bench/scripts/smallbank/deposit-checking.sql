-- SmallBank's DepositChecking as dbduel's smallbank runs it, in pgbench's format (see amalgamate.sql): 1.30 into the
-- checking of the customer found by name.
\set a random(0, :customers - 1)
BEGIN;
SELECT custid FROM accounts WHERE name = lpad(CAST(:a AS text), 64, '0') \gset
UPDATE checking SET bal = bal + 130 WHERE custid = :custid;
COMMIT;
