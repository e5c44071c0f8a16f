-- SmallBank's TransactSavings as dbduel's smallbank runs it, in pgbench's format (see amalgamate.sql): 20.20 out of the
-- savings of the customer found by name, rolled back when the balance would fall below zero.
\set a random(0, :customers - 1)
BEGIN;
SELECT custid FROM accounts WHERE name = lpad(CAST(:a AS text), 64, '0') \gset
SELECT bal FROM savings WHERE custid = :custid \gset
\if :bal - 2020 < 0
ROLLBACK;
\else
UPDATE savings SET bal = bal - 2020 WHERE custid = :custid;
COMMIT;
\endif
