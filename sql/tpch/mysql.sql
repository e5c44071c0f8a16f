-- TPC-H on MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary
-- key, so adding it later rebuilds the table), then the indexes on the foreign-key columns
-- (each table's as soon as it is loaded) and, once all are loaded, the foreign keys (storage engines without them, MyISAM and Aria, take the statement and
-- ignore it). The foreign keys are declared with foreign_key_checks off, as a dump's restore
-- declares them: with the checks on, InnoDB adds one only by copying the whole table (SF 1's
-- lineitem took over 10 minutes per key); the rows are dbgen's, whose references hold.

-- name: create
CREATE TABLE region (r_regionkey integer NOT NULL, r_name char(25) NOT NULL, r_comment varchar(152), PRIMARY KEY (r_regionkey)){plain};
CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, n_regionkey integer NOT NULL, n_comment varchar(152), PRIMARY KEY (n_nationkey)){plain};
CREATE TABLE part (p_partkey integer NOT NULL, p_name varchar(55) NOT NULL, p_mfgr char(25) NOT NULL, p_brand char(10) NOT NULL, p_type varchar(25) NOT NULL, p_size integer NOT NULL, p_container char(10) NOT NULL, p_retailprice decimal(15,2) NOT NULL, p_comment varchar(23) NOT NULL, PRIMARY KEY (p_partkey)){plain};
CREATE TABLE supplier (s_suppkey integer NOT NULL, s_name char(25) NOT NULL, s_address varchar(40) NOT NULL, s_nationkey integer NOT NULL, s_phone char(15) NOT NULL, s_acctbal decimal(15,2) NOT NULL, s_comment varchar(101) NOT NULL, PRIMARY KEY (s_suppkey)){plain};
CREATE TABLE partsupp (ps_partkey integer NOT NULL, ps_suppkey integer NOT NULL, ps_availqty integer NOT NULL, ps_supplycost decimal(15,2) NOT NULL, ps_comment varchar(199) NOT NULL, PRIMARY KEY (ps_partkey, ps_suppkey)){plain};
CREATE TABLE customer (c_custkey integer NOT NULL, c_name varchar(25) NOT NULL, c_address varchar(40) NOT NULL, c_nationkey integer NOT NULL, c_phone char(15) NOT NULL, c_acctbal decimal(15,2) NOT NULL, c_mktsegment char(10) NOT NULL, c_comment varchar(117) NOT NULL, PRIMARY KEY (c_custkey)){plain};
CREATE TABLE orders (o_orderkey bigint NOT NULL, o_custkey integer NOT NULL, o_orderstatus char(1) NOT NULL, o_totalprice decimal(15,2) NOT NULL, o_orderdate date NOT NULL, o_orderpriority char(15) NOT NULL, o_clerk char(15) NOT NULL, o_shippriority integer NOT NULL, o_comment varchar(79) NOT NULL, PRIMARY KEY (o_orderkey)){plain};
CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL, l_linenumber integer NOT NULL, l_quantity decimal(15,2) NOT NULL, l_extendedprice decimal(15,2) NOT NULL, l_discount decimal(15,2) NOT NULL, l_tax decimal(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL, PRIMARY KEY (l_orderkey, l_linenumber)){plain};

-- The indexes of a table as soon as it is loaded, next to the other tables' loads: InnoDB
-- builds one in a single thread, mostly waiting on reads (LINEITEM's takes 10 to 12 s at SF 1),
-- so the load and the index builds share the machine (SF 1 prepare: 37 s to 31 s).
-- name: table keys
CREATE INDEX lineitem_part ON lineitem (l_partkey, l_suppkey);
CREATE INDEX orders_customer ON orders (o_custkey);
CREATE INDEX customer_nation ON customer (c_nationkey);
CREATE INDEX partsupp_supplier ON partsupp (ps_suppkey);
CREATE INDEX supplier_nation ON supplier (s_nationkey);
CREATE INDEX nation_region ON nation (n_regionkey);

-- name: keys
SET foreign_key_checks = 0;
ALTER TABLE nation ADD FOREIGN KEY (n_regionkey) REFERENCES region (r_regionkey);
ALTER TABLE supplier ADD FOREIGN KEY (s_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE customer ADD FOREIGN KEY (c_nationkey) REFERENCES nation (n_nationkey);
ALTER TABLE partsupp ADD FOREIGN KEY (ps_partkey) REFERENCES part (p_partkey);
ALTER TABLE partsupp ADD FOREIGN KEY (ps_suppkey) REFERENCES supplier (s_suppkey);
ALTER TABLE orders ADD FOREIGN KEY (o_custkey) REFERENCES customer (c_custkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_orderkey) REFERENCES orders (o_orderkey);
ALTER TABLE lineitem ADD FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp (ps_partkey, ps_suppkey);
SET foreign_key_checks = 1;

-- Made with each table (`table keys`).
-- name: indexes

-- name: analyze
ANALYZE TABLE region, nation, part, supplier, partsupp, customer, orders, lineitem;
