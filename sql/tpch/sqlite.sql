-- TPC-H on SQLite: keys declared at creation (SQLite adds no key to a table after it is made,
-- nor a foreign key); dates stored as their ISO text 'YYYY-MM-DD', whose comparisons order them
-- as dates do, written as plain string literals; the year as the text's first four digits;
-- substr for substring.

-- name: create
CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL, r_comment varchar(152), PRIMARY KEY (r_regionkey));
CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, n_regionkey integer NOT NULL, n_comment varchar(152), PRIMARY KEY (n_nationkey));
CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL, p_container char(10) NOT NULL, p_retailprice decimal(15,2) NOT NULL, p_comment varchar(23) NOT NULL, PRIMARY KEY (p_partkey));
CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, s_acctbal decimal(15,2) NOT NULL, s_comment varchar(101) NOT NULL, PRIMARY KEY (s_suppkey));
CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, ps_availqty integer NOT NULL, ps_supplycost decimal(15,2) NOT NULL, ps_comment varchar(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey));
CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, c_acctbal decimal(15,2) NOT NULL, c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL, PRIMARY KEY (c_custkey));
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey integer NOT NULL, o_orderstatus char(1) NOT NULL, o_totalprice decimal(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL, PRIMARY KEY (o_orderkey));
CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL, l_linenumber integer NOT NULL, l_quantity decimal(15,2) NOT NULL, l_extendedprice decimal(15,2) NOT NULL, l_discount decimal(15,2) NOT NULL, l_tax decimal(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber));

-- name: keys

-- name: indexes
CREATE INDEX nation_region ON nation (n_regionkey);
CREATE INDEX supplier_nation ON supplier (s_nationkey);
CREATE INDEX customer_nation ON customer (c_nationkey);
CREATE INDEX partsupp_supplier ON partsupp (ps_suppkey);
CREATE INDEX orders_customer ON orders (o_custkey);
CREATE INDEX lineitem_part ON lineitem (l_partkey, l_suppkey);

-- name: date
'{value}'

-- name: q7
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, CAST(substr(l_shipdate, 1, 4) AS integer) AS l_year, l_extendedprice * (1 - l_discount) AS volume
      FROM supplier, lineitem, orders, customer, nation n1, nation n2
      WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
      AND ((n1.n_name = '{NATION1}' AND n2.n_name = '{NATION2}') OR (n1.n_name = '{NATION2}' AND n2.n_name = '{NATION1}'))
      AND l_shipdate BETWEEN {FROM} AND {TO}) shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year

-- name: q8
SELECT o_year, sum(CASE WHEN nation = '{NATION}' THEN volume ELSE 0 END) / sum(volume) AS mkt_share
FROM (SELECT CAST(substr(o_orderdate, 1, 4) AS integer) AS o_year, l_extendedprice * (1 - l_discount) AS volume, n2.n_name AS nation
      FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region
      WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey AND n1.n_regionkey = r_regionkey AND r_name = '{REGION}' AND s_nationkey = n2.n_nationkey
      AND o_orderdate BETWEEN {FROM} AND {TO} AND p_type = '{TYPE}') all_nations
GROUP BY o_year
ORDER BY o_year

-- name: q9
SELECT nation, o_year, sum(amount) AS sum_profit
FROM (SELECT n_name AS nation, CAST(substr(o_orderdate, 1, 4) AS integer) AS o_year, l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
      FROM part, supplier, lineitem, partsupp, orders, nation
      WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey AND p_name LIKE '%{COLOR}%') profit
GROUP BY nation, o_year
ORDER BY nation, o_year DESC

-- name: q22
SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal
FROM (SELECT substr(c_phone, 1, 2) AS cntrycode, c_acctbal FROM customer
      WHERE substr(c_phone, 1, 2) IN ({CODES})
      AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00 AND substr(c_phone, 1, 2) IN ({CODES}))
      AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)) custsale
GROUP BY cntrycode
ORDER BY cntrycode
