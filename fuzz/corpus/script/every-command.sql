\set n random(1, 10) * :scale
\set g random_gaussian(1, 100, 2.5)
\set e random_exponential(1, 100, 3.0)
\set z random_zipfian(1, 100, 1.07)
\set h hash(:n, 5432)
\set p permute(:n, 100)
\if :n > 5
\set big 1
\elif :n = 3
\set big 2
\else
\set big 0
\endif
\sleep 1 ms
BEGIN;
SELECT :n AS a, :big AS b \gset
SELECT 1 AS one \; SELECT 2 AS two \aset
UPDATE pgbench_accounts SET abalance = abalance + :a WHERE aid = :n;
END;
