-- TPC-C on MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary
-- key), DATETIME for timestamps, no UPDATE ... RETURNING: D_NEXT_O_ID is taken through
-- LAST_INSERT_ID(expr), which is per session, so that New-Order stays correct on storage
-- engines without transactions (MyISAM, Aria) too.

-- name: create
CREATE TABLE warehouse (w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9), w_tax decimal(4,4), w_ytd decimal(12,2), PRIMARY KEY (w_id)){plain};
CREATE TABLE district (d_id smallint NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9), d_tax decimal(4,4), d_ytd decimal(12,2), d_next_o_id int, PRIMARY KEY (d_w_id, d_id)){plain};
CREATE TABLE customer (c_id int NOT NULL, c_d_id smallint NOT NULL, c_w_id int NOT NULL, c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), c_since datetime, c_credit char(2), c_credit_lim decimal(12,2), c_discount decimal(4,4), c_balance decimal(12,2), c_ytd_payment decimal(12,2), c_payment_cnt int, c_delivery_cnt int, c_data varchar(500), PRIMARY KEY (c_w_id, c_d_id, c_id)){plain};
CREATE TABLE history (h_c_id int, h_c_d_id smallint, h_c_w_id int, h_d_id smallint, h_w_id int, h_date datetime, h_amount decimal(6,2), h_data varchar(24)){plain};
CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id smallint NOT NULL, no_w_id int NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id)){plain};
CREATE TABLE orders (o_id int NOT NULL, o_d_id smallint NOT NULL, o_w_id int NOT NULL, o_c_id int, o_entry_d datetime, o_carrier_id smallint, o_ol_cnt smallint, o_all_local smallint, PRIMARY KEY (o_w_id, o_d_id, o_id)){plain};
CREATE TABLE order_line (ol_o_id int NOT NULL, ol_d_id smallint NOT NULL, ol_w_id int NOT NULL, ol_number smallint NOT NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d datetime, ol_quantity smallint, ol_amount decimal(6,2), ol_dist_info char(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)){plain};
CREATE TABLE item (i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price decimal(5,2), i_data varchar(50), PRIMARY KEY (i_id)){plain};
CREATE TABLE stock (s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity smallint, s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24), s_ytd decimal(8,0), s_order_cnt smallint, s_remote_cnt smallint, s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id)){plain};

-- name: keys
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

-- name: analyze
ANALYZE TABLE warehouse, district, customer, history, new_order, orders, order_line, item, stock;

-- name: isolation_serializable
SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- name: no_district_bump
UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = ? AND d_id = ?

-- name: no_district
SELECT LAST_INSERT_ID() - 1, d_tax FROM district WHERE d_w_id = ? AND d_id = ?

-- name: procedures_refused
TPC-C stored procedures on MariaDB/MySQL are not provided by this version of dbduel: drop --procedures
