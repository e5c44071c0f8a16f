-- TPC-C (TPC Benchmark C, standard specification revision 5.11): the nine tables of clause 1.3, the
-- statements of the five transactions of clauses 2.4 to 2.8, and the consistency conditions 1 to 4
-- of clause 3.3.2. Generic SQL is PostgreSQL's; mysql.sql, sqlite.sql and firebird.sql override
-- what differs. {plain} carries the table options (MariaDB's storage engine).
--
-- `procedures` holds the server-side code of `--procedures` (here PL/pgSQL functions; New-Order's
-- stock updates and order lines one statement each unless an item repeats), sent as one batch, and
-- `call_*` the calls. `procedures_refused` is empty where a dialect has them and otherwise the
-- one-line reason `--procedures` is refused, so that shared code never asks which engine it runs
-- on.

-- name: drop
DROP TABLE IF EXISTS order_line;
DROP TABLE IF EXISTS new_order;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS history;
DROP TABLE IF EXISTS customer;
DROP TABLE IF EXISTS district;
DROP TABLE IF EXISTS stock;
DROP TABLE IF EXISTS item;
DROP TABLE IF EXISTS warehouse;

-- PostgreSQL: keys are added after loading (clause 1.3's primary keys), which is faster than
-- maintaining them row by row during COPY.
-- name: create
CREATE TABLE warehouse (w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9), w_tax decimal(4,4), w_ytd decimal(12,2)){plain};
CREATE TABLE district (d_id smallint NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2), d_zip char(9), d_tax decimal(4,4), d_ytd decimal(12,2), d_next_o_id int){plain};
CREATE TABLE customer (c_id int NOT NULL, c_d_id smallint NOT NULL, c_w_id int NOT NULL, c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim decimal(12,2), c_discount decimal(4,4), c_balance decimal(12,2), c_ytd_payment decimal(12,2), c_payment_cnt int, c_delivery_cnt int, c_data varchar(500)){plain};
CREATE TABLE history (h_c_id int, h_c_d_id smallint, h_c_w_id int, h_d_id smallint, h_w_id int, h_date timestamp, h_amount decimal(6,2), h_data varchar(24)){plain};
CREATE TABLE new_order (no_o_id int NOT NULL, no_d_id smallint NOT NULL, no_w_id int NOT NULL){plain};
CREATE TABLE orders (o_id int NOT NULL, o_d_id smallint NOT NULL, o_w_id int NOT NULL, o_c_id int, o_entry_d timestamp, o_carrier_id smallint, o_ol_cnt smallint, o_all_local smallint){plain};
CREATE TABLE order_line (ol_o_id int NOT NULL, ol_d_id smallint NOT NULL, ol_w_id int NOT NULL, ol_number smallint NOT NULL, ol_i_id int, ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity smallint, ol_amount decimal(6,2), ol_dist_info char(24)){plain};
CREATE TABLE item (i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price decimal(5,2), i_data varchar(50)){plain};
CREATE TABLE stock (s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity smallint, s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24), s_dist_10 char(24), s_ytd decimal(8,0), s_order_cnt smallint, s_remote_cnt smallint, s_data varchar(50)){plain};

-- Clause 1.3's primary keys, and the two secondary indexes every kit adds: customers by
-- last name (Payment and Order-Status, clauses 2.5.2.2 and 2.6.2.2) and orders by customer
-- (Order-Status's latest order).
-- name: keys
ALTER TABLE warehouse ADD PRIMARY KEY (w_id);
ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id);
ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id);
ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id);
ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id);
ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number);
ALTER TABLE item ADD PRIMARY KEY (i_id);
ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id);
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);

-- name: analyze
ANALYZE;

-- name: isolation_serializable
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- New-Order (clause 2.4.2.2).
-- name: no_warehouse
SELECT w_tax FROM warehouse WHERE w_id = ?

-- name: no_customer
SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- The order's items in one round trip; {ids} is one ? per distinct item.
-- name: no_items
SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({ids})

-- Increments D_NEXT_O_ID and returns the order's number and D_TAX (one round trip where
-- the engine has UPDATE ... RETURNING; otherwise no_district reads them after the update).
-- name: no_district_bump
UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ? RETURNING d_next_o_id - 1, d_tax

-- name: no_district
SELECT d_next_o_id - 1, d_tax FROM district WHERE d_w_id = ? AND d_id = ?

-- name: no_order
INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)

-- name: no_new_order
INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)

-- name: no_stock
SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = ? AND s_i_id = ? FOR UPDATE

-- The home warehouse's stock rows of the order in one round trip; {ids} is one ? per distinct
-- item (lines supplied by another warehouse, 1%, use no_stock).
-- name: no_stocks
SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = ? AND s_i_id IN ({ids}) FOR UPDATE

-- name: no_stock_update
UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?

-- The home warehouse's stock rows of the order updated in one round trip (they are locked
-- already by no_stocks); {quantity}, {ytd} and {count} repeat no_stock_update_case once per
-- distinct item (item, value), {ids} is one ? per distinct item.
-- name: no_stock_updates
UPDATE stock SET s_quantity = CASE s_i_id {quantity} ELSE s_quantity END, s_ytd = s_ytd + CASE s_i_id {ytd} ELSE 0 END, s_order_cnt = s_order_cnt + CASE s_i_id {count} ELSE 0 END WHERE s_w_id = ? AND s_i_id IN ({ids})

-- name: no_stock_update_case
WHEN ? THEN ?

-- The order's lines in one statement; {rows} repeats no_order_line_row once per line.
-- name: no_order_lines
INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES {rows}

-- name: no_order_line_row
(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)

-- What goes between two rows of no_order_lines.
-- name: no_order_lines_joiner
,

-- Payment (clause 2.5.2.2).
-- name: p_warehouse_update
UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?

-- name: p_warehouse
SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?

-- name: p_district_update
UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?

-- name: p_district
SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ? AND d_id = ?

-- Customers of a last name, sorted by first name (clauses 2.5.2.2 and 2.6.2.2).
-- name: customers_by_name
SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first

-- name: p_customer
SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE

-- name: p_customer_update
UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- name: p_customer_data
SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- name: p_customer_update_bc
UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- name: p_history
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)

-- Order-Status (clause 2.6.2.2).
-- name: os_customer
SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- name: os_last_order
SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1

-- name: os_lines
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?

-- Delivery (clause 2.7.4.2).
-- name: d_oldest
SELECT min(no_o_id) FROM new_order WHERE no_w_id = ? AND no_d_id = ?

-- name: d_delete
DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?

-- name: d_order
SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?

-- name: d_order_update
UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?

-- name: d_lines_update
UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?

-- name: d_lines_sum
SELECT COALESCE(SUM(ol_amount), 0) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?

-- name: d_customer_update
UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- Stock-Level (clause 2.8.2.2).
-- name: sl_district
SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?

-- name: sl_count
SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?

-- Checks.
-- name: count_warehouses
SELECT count(*) FROM warehouse

-- name: cardinalities
SELECT (SELECT count(*) FROM warehouse), (SELECT count(*) FROM district), (SELECT count(*) FROM customer), (SELECT count(*) FROM item), (SELECT count(*) FROM stock)

-- Consistency condition 1 (clause 3.3.2.1): W_YTD = sum(D_YTD), per warehouse.
-- name: condition_1
SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) FROM warehouse ORDER BY w_id

-- Condition 2 (3.3.2.2): D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID), per district.
-- name: condition_2
SELECT d_w_id, d_id, d_next_o_id - 1, (SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id), (SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id) FROM district ORDER BY d_w_id, d_id

-- Condition 3 (3.3.2.3): max(NO_O_ID) - min(NO_O_ID) + 1 = the rows of NEW-ORDER, per district.
-- name: condition_3
SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1, count(*) FROM new_order GROUP BY no_w_id, no_d_id ORDER BY no_w_id, no_d_id

-- Condition 4 (3.3.2.4): sum(O_OL_CNT) = the rows of ORDER-LINE, per district.
-- name: condition_4_orders
SELECT o_w_id, o_d_id, sum(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id ORDER BY o_w_id, o_d_id

-- name: condition_4_lines
SELECT ol_w_id, ol_d_id, count(*) FROM order_line GROUP BY ol_w_id, ol_d_id ORDER BY ol_w_id, ol_d_id

-- The five transactions as server-side code (`--procedures`), one call per transaction. The
-- terminal draws every input (txn.rs) and passes it in, so both modes draw the same mix; each
-- function follows the client-side statements above step by step. An empty section: this
-- dialect has them; otherwise the one-line reason `--procedures` is refused.
-- name: procedures_refused

-- name: procedures_drop
DROP FUNCTION IF EXISTS tpcc_new_order;
DROP FUNCTION IF EXISTS tpcc_payment;
DROP FUNCTION IF EXISTS tpcc_order_status;
DROP FUNCTION IF EXISTS tpcc_delivery;
DROP FUNCTION IF EXISTS tpcc_stock_level;
DROP FUNCTION IF EXISTS tpcc_customer_by_name;

-- PL/pgSQL, sent as one batch (bodies hold semicolons). Comments stay out of the bodies: this
-- file's comment lines are not kept.
-- tpcc_new_order updates its stock rows and inserts its order lines in one statement each when
-- no (warehouse, item) pair repeats in the order; an order that names an item twice takes the
-- line-by-line loop, where the second line sees the first one's stock update (clause 2.4.2.2).
-- name: procedures
CREATE FUNCTION tpcc_customer_by_name(p_w int, p_d int, p_last text) RETURNS int AS $$
DECLARE
  v_ids int[];
BEGIN
  SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
  IF v_ids IS NULL THEN
    RAISE EXCEPTION 'no customer named % in warehouse %, district %', p_last, p_w, p_d;
  END IF;
  RETURN v_ids[(cardinality(v_ids) + 1) / 2];
END $$ LANGUAGE plpgsql;

CREATE FUNCTION tpcc_new_order(p_w int, p_d int, p_c int, p_items int[], p_supply int[], p_quantity int[], OUT order_id int, OUT order_total numeric) AS $$
DECLARE
  v_lines int := cardinality(p_items);
  v_w_tax numeric;
  v_d_tax numeric;
  v_discount numeric;
  v_price numeric;
  v_dist char(24);
  v_amount numeric;
BEGIN
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  SELECT c_discount INTO v_discount FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  IF (SELECT count(*) FROM item WHERE i_id = ANY (p_items)) < (SELECT count(DISTINCT i) FROM unnest(p_items) AS i) THEN
    order_id := 0;
    order_total := 0;
    RETURN;
  END IF;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d RETURNING d_next_o_id - 1, d_tax INTO order_id, v_d_tax;
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (order_id, p_d, p_w, p_c, CURRENT_TIMESTAMP, NULL, v_lines, CASE WHEN p_w = ALL (p_supply) THEN 1 ELSE 0 END);
  IF (SELECT count(DISTINCT (w, i)) FROM unnest(p_supply, p_items) AS l(w, i)) = v_lines THEN
    WITH l AS (SELECT * FROM unnest(p_items, p_supply, p_quantity) WITH ORDINALITY AS l(i, w, q, n)),
    s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= l.q + 10 THEN s_quantity - l.q ELSE s_quantity - l.q + 91 END, s_ytd = s_ytd + l.q, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN l.w = p_w THEN 0 ELSE 1 END FROM l WHERE s_w_id = l.w AND s_i_id = l.i RETURNING s_w_id, s_i_id, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS dist),
    ol AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) SELECT order_id, p_d, p_w, l.n, l.i, l.w, NULL, l.q, round(l.q * item.i_price, 2), s.dist FROM l JOIN item ON item.i_id = l.i JOIN s ON s.s_w_id = l.w AND s.s_i_id = l.i RETURNING ol_amount)
    SELECT COALESCE(sum(ol_amount), 0) INTO order_total FROM ol;
  ELSE
    order_total := 0;
    FOR k IN 1 .. v_lines LOOP
      SELECT i_price INTO v_price FROM item WHERE i_id = p_items[k];
      UPDATE stock SET s_quantity = CASE WHEN s_quantity >= p_quantity[k] + 10 THEN s_quantity - p_quantity[k] ELSE s_quantity - p_quantity[k] + 91 END, s_ytd = s_ytd + p_quantity[k], s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[k] = p_w THEN 0 ELSE 1 END WHERE s_w_id = p_supply[k] AND s_i_id = p_items[k] RETURNING CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END INTO v_dist;
      v_amount := round(p_quantity[k] * v_price, 2);
      order_total := order_total + v_amount;
      INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (order_id, p_d, p_w, k, p_items[k], p_supply[k], NULL, p_quantity[k], v_amount, v_dist);
    END LOOP;
  END IF;
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (order_id, p_d, p_w);
  order_total := order_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
END $$ LANGUAGE plpgsql;

CREATE FUNCTION tpcc_payment(p_w int, p_d int, p_c_w int, p_c_d int, p_c int, p_last text, p_amount numeric) RETURNS int AS $$
DECLARE
  v_c int := p_c;
  v_w_name text;
  v_d_name text;
  v_credit text;
  v_data text;
BEGIN
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_w_name;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_d_name;
  IF p_c = 0 THEN
    v_c := tpcc_customer_by_name(p_c_w, p_c_d, p_last);
  END IF;
  SELECT c_credit, c_data INTO v_credit, v_data FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
  IF v_credit = 'BC' THEN
    v_data := left(format('%s %s %s %s %s %s|%s', v_c, p_c_d, p_c_w, p_d, p_w, round(p_amount, 2), v_data), 500);
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1, c_data = v_data WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (v_c, p_c_d, p_c_w, p_d, p_w, CURRENT_TIMESTAMP, p_amount, left(v_w_name || '    ' || v_d_name, 24));
  RETURN v_c;
END $$ LANGUAGE plpgsql;

CREATE FUNCTION tpcc_order_status(p_w int, p_d int, p_c int, p_last text) RETURNS TABLE (item int, supply_w int, quantity int, amount numeric, delivered timestamp) AS $$
DECLARE
  v_c int := p_c;
  v_balance numeric;
  v_first text;
  v_middle text;
  v_last text;
  v_o int;
  v_entry timestamp;
  v_carrier int;
BEGIN
  IF p_c = 0 THEN
    v_c := tpcc_customer_by_name(p_w, p_d, p_last);
  END IF;
  SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  IF v_o IS NOT NULL THEN
    RETURN QUERY SELECT ol_i_id, ol_supply_w_id, ol_quantity::int, ol_amount::numeric, ol_delivery_d FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  END IF;
END $$ LANGUAGE plpgsql;

CREATE FUNCTION tpcc_delivery(p_w int, p_carrier int) RETURNS int AS $$
DECLARE
  v_o int;
  v_c int;
  v_sum numeric;
  v_done int := 0;
BEGIN
  FOR v_d IN 1 .. 10 LOOP
    DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = (SELECT min(no_o_id) FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d) RETURNING no_o_id INTO v_o;
    CONTINUE WHEN v_o IS NULL;
    UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o RETURNING o_c_id INTO v_c;
    WITH delivered AS (UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o RETURNING ol_amount) SELECT COALESCE(sum(ol_amount), 0) INTO v_sum FROM delivered;
    UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
    v_done := v_done + 1;
  END LOOP;
  RETURN v_done;
END $$ LANGUAGE plpgsql;

CREATE FUNCTION tpcc_stock_level(p_w int, p_d int, p_threshold int) RETURNS int AS $$
DECLARE
  v_next int;
  v_count int;
BEGIN
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO v_count FROM order_line, stock WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  RETURN v_count;
END $$ LANGUAGE plpgsql;

-- One call per transaction; arrays travel as text ('{1,2,3}').
-- name: call_new_order
SELECT order_id FROM tpcc_new_order(CAST(? AS int), CAST(? AS int), CAST(? AS int), CAST(? AS int[]), CAST(? AS int[]), CAST(? AS int[]))

-- name: call_payment
SELECT tpcc_payment(CAST(? AS int), CAST(? AS int), CAST(? AS int), CAST(? AS int), CAST(? AS int), CAST(? AS text), CAST(? AS numeric))

-- name: call_order_status
SELECT * FROM tpcc_order_status(CAST(? AS int), CAST(? AS int), CAST(? AS int), CAST(? AS text))

-- name: call_delivery
SELECT tpcc_delivery(CAST(? AS int), CAST(? AS int))

-- name: call_stock_level
SELECT tpcc_stock_level(CAST(? AS int), CAST(? AS int), CAST(? AS int))
