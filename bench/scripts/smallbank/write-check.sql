-- SmallBank's WriteCheck as dbduel's smallbank runs it, in pgbench's format (see amalgamate.sql): 5.00 from the
-- checking of the customer found by name, 1.00 more when savings and checking together hold less.
\set a random(0, :customers - 1)
BEGIN;
SELECT custid FROM accounts WHERE name = lpad(CAST(:a AS text), 64, '0') \gset
SELECT bal AS s FROM savings WHERE custid = :custid \gset
SELECT bal AS c FROM checking WHERE custid = :custid \gset
\if :s + :c < 500
\set charge 600
\else
\set charge 500
\endif
UPDATE checking SET bal = bal - :charge WHERE custid = :custid;
COMMIT;
