-- TPC-H (TPC Benchmark H, standard specification revision 3.0.1): the eight tables of clause 1.4,
-- their keys and indexes, the 22 queries of clause 2.4 and the refresh functions of clause 2.5.
-- Generic SQL is PostgreSQL's; mysql.sql, sqlite.sql and firebird.sql override what differs.
-- {plain} carries the table options (MariaDB's storage engine). A query's substitution parameters
-- are {NAME}s, already rendered as literals by the client (dates through the `date` section; date
-- arithmetic on a parameter is done by the client, so that every dialect compares a column with a
-- constant).
--
-- After the load: `table keys`, a table's statements, run by the session that loaded its last part
-- as soon as it is loaded; then, once all are loaded, `keys` (primary and foreign keys) and
-- `indexes`.

-- name: drop
DROP TABLE IF EXISTS lineitem;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS partsupp;
DROP TABLE IF EXISTS customer;
DROP TABLE IF EXISTS supplier;
DROP TABLE IF EXISTS part;
DROP TABLE IF EXISTS nation;
DROP TABLE IF EXISTS region;

-- Clause 1.4.1's tables; keys come after the load (faster than maintaining them during COPY).
-- name: create
CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL, r_comment varchar(152)){plain};
CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, n_regionkey integer NOT NULL, n_comment varchar(152)){plain};
CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL, p_container char(10) NOT NULL, p_retailprice decimal(15,2) NOT NULL, p_comment varchar(23) NOT NULL){plain};
CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, s_acctbal decimal(15,2) NOT NULL, s_comment varchar(101) NOT NULL){plain};
CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, ps_availqty integer NOT NULL, ps_supplycost decimal(15,2) NOT NULL, ps_comment varchar(199) NOT NULL){plain};
CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, c_acctbal decimal(15,2) NOT NULL, c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL){plain};
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey integer NOT NULL, o_orderstatus char(1) NOT NULL, o_totalprice decimal(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL){plain};
CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL, l_linenumber integer NOT NULL, l_quantity decimal(15,2) NOT NULL, l_extendedprice decimal(15,2) NOT NULL, l_discount decimal(15,2) NOT NULL, l_tax decimal(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL){plain};

-- Clause 1.4.2.2's primary keys, 1.4.2.3's foreign keys (clause 1.5.7 allows them), and
-- indexes on the foreign-key columns (clause 1.5.4 allows indexes on keys).
-- table keys: each statement changes the table it names (ALTER TABLE t ..., CREATE INDEX i ON
-- t) and runs as soon as that table's rows are in, in the session that loaded its last part,
-- while the other tables load; then `keys` and `indexes`, in their order, once every table
-- is loaded.
-- PostgreSQL: none. Its load already keeps both cores of a small machine busy, and building
-- the primary keys next to it measured 3% slower at SF 1; a foreign key is checked faster
-- before the index on its columns exists, hence the indexes last.
-- name: table keys

-- name: keys
ALTER TABLE region ADD PRIMARY KEY (r_regionkey);
ALTER TABLE nation ADD PRIMARY KEY (n_nationkey);
ALTER TABLE part ADD PRIMARY KEY (p_partkey);
ALTER TABLE supplier ADD PRIMARY KEY (s_suppkey);
ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);
ALTER TABLE customer ADD PRIMARY KEY (c_custkey);
ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
ALTER TABLE nation ADD FOREIGN KEY (n_regionkey) REFERENCES region (r_regionkey);
ALTER TABLE supplier ADD FOREIGN KEY (s_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE customer ADD FOREIGN KEY (c_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE partsupp ADD FOREIGN KEY (ps_partkey) REFERENCES part (p_partkey);
ALTER TABLE partsupp ADD FOREIGN KEY (ps_suppkey) REFERENCES supplier (s_suppkey);
ALTER TABLE orders ADD FOREIGN KEY (o_custkey) REFERENCES customer (c_custkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_orderkey) REFERENCES orders (o_orderkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp (ps_partkey, ps_suppkey);

-- name: indexes
CREATE INDEX nation_region ON nation (n_regionkey);
CREATE INDEX supplier_nation ON supplier (s_nationkey);
CREATE INDEX customer_nation ON customer (c_nationkey);
CREATE INDEX partsupp_supplier ON partsupp (ps_suppkey);
CREATE INDEX orders_customer ON orders (o_custkey);
CREATE INDEX lineitem_part ON lineitem (l_partkey, l_suppkey);

-- name: analyze
ANALYZE;

-- A date as a literal of the dialect ({value}: YYYY-MM-DD).
-- name: date
date '{value}'

-- name: count
SELECT (SELECT count(*) FROM region), (SELECT count(*) FROM nation), (SELECT count(*) FROM part), (SELECT count(*) FROM supplier), (SELECT count(*) FROM partsupp), (SELECT count(*) FROM customer), (SELECT count(*) FROM orders), (SELECT count(*) FROM lineitem)

-- Refresh function 1 (clause 2.5.2): new orders and their line items.
-- name: rf1_order
INSERT INTO orders (o_orderkey, o_custkey, o_orderstatus, o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: rf1_lineitem
INSERT INTO lineitem (l_orderkey, l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode, l_comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- Refresh function 2 (clause 2.5.3): old orders and their line items deleted.
-- name: rf2_lineitem
DELETE FROM lineitem WHERE l_orderkey = ?

-- name: rf2_order
DELETE FROM orders WHERE o_orderkey = ?

-- Q1, the pricing summary report (clause 2.4.1).
-- name: q1
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price, sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= {SHIPDATE}
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus

-- Q2, the minimum cost supplier (clause 2.4.2).
-- name: q2
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp, nation, region
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = {SIZE} AND p_type LIKE '%{TYPE}' AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = '{REGION}'
AND ps_supplycost = (SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = '{REGION}')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey
LIMIT 100

-- Q3, the shipping priority (clause 2.4.3).
-- name: q3
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM customer, orders, lineitem
WHERE c_mktsegment = '{SEGMENT}' AND c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate < {DATE} AND l_shipdate > {DATE}
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate
LIMIT 10

-- Q4, the order priority checking (clause 2.4.4).
-- name: q4
SELECT o_orderpriority, count(*) AS order_count
FROM orders
WHERE o_orderdate >= {DATE} AND o_orderdate < {DATE_3MONTHS}
AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
ORDER BY o_orderpriority

-- Q5, the local supplier volume (clause 2.4.5).
-- name: q5
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem, supplier, nation, region
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = '{REGION}' AND o_orderdate >= {DATE} AND o_orderdate < {DATE_1YEAR}
GROUP BY n_name
ORDER BY revenue DESC

-- Q6, the forecasting revenue change (clause 2.4.6); DISCOUNT - 0.01 and DISCOUNT + 0.01 come
-- computed, as exact decimals (a binary float sum misses the bounds).
-- name: q6
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= {DATE} AND l_shipdate < {DATE_1YEAR} AND l_discount BETWEEN {DISCOUNT_LO} AND {DISCOUNT_HI} AND l_quantity < {QUANTITY}

-- Q7, the volume shipping (clause 2.4.7).
-- name: q7
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, extract(year FROM l_shipdate) AS l_year, l_extendedprice * (1 - l_discount) AS volume
      FROM supplier, lineitem, orders, customer, nation n1, nation n2
      WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
      AND ((n1.n_name = '{NATION1}' AND n2.n_name = '{NATION2}') OR (n1.n_name = '{NATION2}' AND n2.n_name = '{NATION1}'))
      AND l_shipdate BETWEEN {FROM} AND {TO}) shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year

-- Q8, the national market share (clause 2.4.8).
-- name: q8
SELECT o_year, sum(CASE WHEN nation = '{NATION}' THEN volume ELSE 0 END) / sum(volume) AS mkt_share
FROM (SELECT extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation
      FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region
      WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey AND n1.n_regionkey = r_regionkey AND r_name = '{REGION}' AND s_nationkey = n2.n_nationkey
      AND o_orderdate BETWEEN {FROM} AND {TO} AND p_type = '{TYPE}') all_nations
GROUP BY o_year
ORDER BY o_year

-- Q9, the product type profit measure (clause 2.4.9).
-- name: q9
SELECT nation, o_year, sum(amount) AS sum_profit
FROM (SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
      FROM part, supplier, lineitem, partsupp, orders, nation
      WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey AND p_name LIKE '%{COLOR}%') profit
GROUP BY nation, o_year
ORDER BY nation, o_year DESC

-- Q10, the returned item reporting (clause 2.4.10).
-- name: q10
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name, c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= {DATE} AND o_orderdate < {DATE_3MONTHS} AND l_returnflag = 'R' AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC
LIMIT 20

-- Q11, the important stock identification (clause 2.4.11).
-- name: q11
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{NATION}'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (SELECT sum(ps_supplycost * ps_availqty) * {FRACTION} FROM partsupp, supplier, nation WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = '{NATION}')
ORDER BY value DESC

-- Q12, the shipping modes and order priority (clause 2.4.12).
-- name: q12
SELECT l_shipmode, sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count, sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count
FROM orders, lineitem
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('{SHIPMODE1}', '{SHIPMODE2}') AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate AND l_receiptdate >= {DATE} AND l_receiptdate < {DATE_1YEAR}
GROUP BY l_shipmode
ORDER BY l_shipmode

-- Q13, the customer distribution (clause 2.4.13); the derived table's columns are named
-- inside it (MariaDB takes no column list after a derived table's name).
-- name: q13
SELECT c_count, count(*) AS custdist
FROM (SELECT c_custkey, count(o_orderkey) AS c_count FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%{WORD1}%{WORD2}%' GROUP BY c_custkey) c_orders
GROUP BY c_count
ORDER BY custdist DESC, c_count DESC

-- Q14, the promotion effect (clause 2.4.14).
-- name: q14
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END) / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM lineitem, part
WHERE l_partkey = p_partkey AND l_shipdate >= {DATE} AND l_shipdate < {DATE_1MONTH}

-- Q15, the top supplier (clause 2.4.15), with the view as a common table expression.
-- name: q15
WITH revenue0 (supplier_no, total_revenue) AS (SELECT l_suppkey, sum(l_extendedprice * (1 - l_discount)) FROM lineitem WHERE l_shipdate >= {DATE} AND l_shipdate < {DATE_3MONTHS} GROUP BY l_suppkey)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM supplier, revenue0
WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue0)
ORDER BY s_suppkey

-- Q16, the parts/supplier relationship (clause 2.4.16).
-- name: q16
SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt
FROM partsupp, part
WHERE p_partkey = ps_partkey AND p_brand <> '{BRAND}' AND p_type NOT LIKE '{TYPE}%' AND p_size IN ({SIZES})
AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_comment LIKE '%Customer%Complaints%')
GROUP BY p_brand, p_type, p_size
ORDER BY supplier_cnt DESC, p_brand, p_type, p_size

-- Q17, the small-quantity-order revenue (clause 2.4.17).
-- name: q17
SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
FROM lineitem, part
WHERE p_partkey = l_partkey AND p_brand = '{BRAND}' AND p_container = '{CONTAINER}'
AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)

-- Q18, the large volume customer (clause 2.4.18).
-- name: q18
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM customer, orders, lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > {QUANTITY})
AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate
LIMIT 100

-- Q19, the discounted revenue (clause 2.4.19).
-- name: q19
SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem, part
WHERE (p_partkey = l_partkey AND p_brand = '{BRAND1}' AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') AND l_quantity >= {QUANTITY1} AND l_quantity <= {QUANTITY1} + 10 AND p_size BETWEEN 1 AND 5 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
OR (p_partkey = l_partkey AND p_brand = '{BRAND2}' AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') AND l_quantity >= {QUANTITY2} AND l_quantity <= {QUANTITY2} + 10 AND p_size BETWEEN 1 AND 10 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
OR (p_partkey = l_partkey AND p_brand = '{BRAND3}' AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') AND l_quantity >= {QUANTITY3} AND l_quantity <= {QUANTITY3} + 10 AND p_size BETWEEN 1 AND 15 AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')

-- Q20, the potential part promotion (clause 2.4.20).
-- name: q20
SELECT s_name, s_address
FROM supplier, nation
WHERE s_suppkey IN (SELECT ps_suppkey FROM partsupp WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE '{COLOR}%')
  AND ps_availqty > (SELECT 0.5 * sum(l_quantity) FROM lineitem WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey AND l_shipdate >= {DATE} AND l_shipdate < {DATE_1YEAR}))
AND s_nationkey = n_nationkey AND n_name = '{NATION}'
ORDER BY s_name

-- Q21, the suppliers who kept orders waiting (clause 2.4.21).
-- name: q21
SELECT s_name, count(*) AS numwait
FROM supplier, lineitem l1, orders, nation
WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate
AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)
AND s_nationkey = n_nationkey AND n_name = '{NATION}'
GROUP BY s_name
ORDER BY numwait DESC, s_name
LIMIT 100

-- Q22, the global sales opportunity (clause 2.4.22).
-- name: q22
SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal
FROM (SELECT substring(c_phone FROM 1 FOR 2) AS cntrycode, c_acctbal FROM customer
      WHERE substring(c_phone FROM 1 FOR 2) IN ({CODES})
      AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00 AND substring(c_phone FROM 1 FOR 2) IN ({CODES}))
      AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)) custsale
GROUP BY cntrycode
ORDER BY cntrycode

-- The orders a refresh pair inserts, between two keys, left by an interrupted run whose
-- refresh function 2 never ran: their keys lie in the sparse range no loaded order takes (8 to
-- 31 of every 32).
-- name: rf_leftover_lines
DELETE FROM lineitem WHERE l_orderkey BETWEEN ? AND ? AND l_orderkey % 32 >= 8

-- name: rf_leftover_orders
DELETE FROM orders WHERE o_orderkey BETWEEN ? AND ? AND o_orderkey % 32 >= 8
