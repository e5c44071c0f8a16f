-- TPC-H on Firebird 3: no DROP TABLE IF EXISTS (the catalogue is asked first); the primary
-- and foreign keys after the load (a foreign key makes its own index, so no other index is
-- added); SET STATISTICS for ANALYZE; ROWS for LIMIT; RDB$DATABASE for a FROM-less SELECT;
-- VALUE is a reserved word, so Q11's column is quoted. Each EXECUTE BLOCK stays on one line.

-- name: drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'LINEITEM')) THEN EXECUTE STATEMENT 'DROP TABLE lineitem'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'ORDERS')) THEN EXECUTE STATEMENT 'DROP TABLE orders'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PARTSUPP')) THEN EXECUTE STATEMENT 'DROP TABLE partsupp'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'CUSTOMER')) THEN EXECUTE STATEMENT 'DROP TABLE customer'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'SUPPLIER')) THEN EXECUTE STATEMENT 'DROP TABLE supplier'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'PART')) THEN EXECUTE STATEMENT 'DROP TABLE part'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'NATION')) THEN EXECUTE STATEMENT 'DROP TABLE nation'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'REGION')) THEN EXECUTE STATEMENT 'DROP TABLE region'; END;

-- A foreign key makes its own index: no other.
-- name: indexes

-- name: analyze
EXECUTE BLOCK AS DECLARE i VARCHAR(63); BEGIN FOR SELECT TRIM(RDB$INDEX_NAME) FROM RDB$INDICES WHERE RDB$RELATION_NAME IN ('LINEITEM','ORDERS','PARTSUPP','CUSTOMER','SUPPLIER','PART','NATION','REGION') INTO :i DO EXECUTE STATEMENT 'SET STATISTICS INDEX "' || i || '"'; END

-- name: count
SELECT (SELECT count(*) FROM region), (SELECT count(*) FROM nation), (SELECT count(*) FROM part), (SELECT count(*) FROM supplier), (SELECT count(*) FROM partsupp), (SELECT count(*) FROM customer), (SELECT count(*) FROM orders), (SELECT count(*) FROM lineitem) FROM RDB$DATABASE

-- name: q2
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp, nation, region
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = {SIZE} AND p_type LIKE '%{TYPE}' AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = '{REGION}'
AND ps_supplycost = (SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = '{REGION}')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey
ROWS 100

-- name: q3
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM customer, orders, lineitem
WHERE c_mktsegment = '{SEGMENT}' AND c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate < {DATE} AND l_shipdate > {DATE}
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate
ROWS 10

-- name: q10
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name, c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= {DATE} AND o_orderdate < {DATE_3MONTHS} AND l_returnflag = 'R' AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC
ROWS 20

-- name: q18
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM customer, orders, lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > {QUANTITY})
AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate
ROWS 100

-- name: q21
SELECT s_name, count(*) AS numwait
FROM supplier, lineitem l1, orders, nation
WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate
AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)
AND s_nationkey = n_nationkey AND n_name = '{NATION}'
GROUP BY s_name
ORDER BY numwait DESC, s_name
ROWS 100

-- name: q11
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS "VALUE"
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{NATION}'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (SELECT sum(ps_supplycost * ps_availqty) * {FRACTION} FROM partsupp, supplier, nation WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{NATION}')
ORDER BY "VALUE" DESC

-- name: rf_leftover_lines
DELETE FROM lineitem WHERE l_orderkey BETWEEN ? AND ? AND mod(l_orderkey, 32) >= 8

-- name: rf_leftover_orders
DELETE FROM orders WHERE o_orderkey BETWEEN ? AND ? AND mod(o_orderkey, 32) >= 8
