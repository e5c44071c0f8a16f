-- SmallBank's Amalgamate as dbduel's smallbank runs it (src/workload/smallbank/txn.rs), in pgbench's format, for
-- bench/vs-smallbank's floor: both customers looked up by id, all of the first's money into the second's checking.
-- -D customers=N gives the customers (dbduel's --scale times 100,000); BEGIN is a round trip of its own, as pgbench sends it.
\set a random(0, :customers - 1)
\set b (:a + 1 + random(0, :customers - 2)) % :customers
BEGIN;
SELECT custid, name FROM accounts WHERE custid = :a;
SELECT custid, name FROM accounts WHERE custid = :b;
SELECT bal AS s FROM savings WHERE custid = :a \gset
SELECT bal AS c FROM checking WHERE custid = :a \gset
UPDATE savings SET bal = 0 WHERE custid = :a;
UPDATE checking SET bal = 0 WHERE custid = :a;
\set total :s + :c
UPDATE checking SET bal = bal + :total WHERE custid = :b;
COMMIT;
