-- TPC-C on MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary key),
-- DATETIME for timestamps, no UPDATE ... RETURNING: D_NEXT_O_ID is taken through
-- LAST_INSERT_ID(expr), which is per session, so that New-Order stays correct on storage engines
-- without transactions (MyISAM, Aria) too. At the end, the five transactions as stored procedures
-- (`--procedures`), item lists read as JSON.

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

-- The five transactions as stored procedures (`--procedures`); see generic.sql. A CALL in
-- autocommit would commit each statement on its own, so each procedure opens and commits its
-- own transaction, and on any error rolls back and re-raises it unchanged (deadlock 1213, lock
-- wait timeout 1205: the client retries as it does its own statements). Item lists travel as
-- text '{1,2,3}', as on PostgreSQL, read as the JSON array '[1,2,3]'. Each procedure returns
-- one result set, always of the same columns.
-- name: procedures_drop
DROP PROCEDURE IF EXISTS tpcc_new_order;
DROP PROCEDURE IF EXISTS tpcc_payment;
DROP PROCEDURE IF EXISTS tpcc_order_status;
DROP PROCEDURE IF EXISTS tpcc_delivery;
DROP PROCEDURE IF EXISTS tpcc_stock_level;
DROP PROCEDURE IF EXISTS tpcc_customer_by_name;

-- name: procedures
CREATE PROCEDURE tpcc_customer_by_name(IN p_w int, IN p_d int, IN p_last varchar(16), OUT p_c int)
BEGIN
  DECLARE v_n int;
  DECLARE v_skip int;
  SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last;
  IF v_n = 0 THEN
    SET @tpcc_message = CONCAT('no customer named ', p_last, ' in warehouse ', p_w, ', district ', p_d);
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = @tpcc_message;
  END IF;
  SET v_skip = (v_n + 1) DIV 2 - 1;
  SELECT c_id INTO p_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_last ORDER BY c_first LIMIT v_skip, 1;
END;

CREATE PROCEDURE tpcc_new_order(IN p_w int, IN p_d int, IN p_c int, IN p_items varchar(400), IN p_supply varchar(400), IN p_quantity varchar(400))
BEGIN
  DECLARE v_lines int;
  DECLARE v_k int DEFAULT 0;
  DECLARE v_o int;
  DECLARE v_i int;
  DECLARE v_s int;
  DECLARE v_q int;
  DECLARE v_w_tax decimal(4,4);
  DECLARE v_d_tax decimal(4,4);
  DECLARE v_discount decimal(4,4);
  DECLARE v_price decimal(5,2);
  DECLARE v_stock int;
  DECLARE v_dist char(24);
  DECLARE v_amount decimal(6,2);
  DECLARE v_total decimal(12,2) DEFAULT 0;
  DECLARE v_distinct int;
  DECLARE v_found int;
  DECLARE v_remote int;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET p_items = CONCAT('[', SUBSTRING(p_items, 2, CHAR_LENGTH(p_items) - 2), ']');
  SET p_supply = CONCAT('[', SUBSTRING(p_supply, 2, CHAR_LENGTH(p_supply) - 2), ']');
  SET p_quantity = CONCAT('[', SUBSTRING(p_quantity, 2, CHAR_LENGTH(p_quantity) - 2), ']');
  SET v_lines = JSON_LENGTH(p_items);
  START TRANSACTION;
  SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w;
  SELECT c_discount INTO v_discount FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
  SELECT count(DISTINCT j.i), count(DISTINCT i_id) INTO v_distinct, v_found FROM JSON_TABLE(p_items, '$[*]' COLUMNS (i int PATH '$')) AS j LEFT JOIN item ON i_id = j.i;
  IF v_found < v_distinct THEN
    ROLLBACK;
    SELECT 0 AS order_id, 0 AS order_total;
  ELSE
    UPDATE district SET d_next_o_id = LAST_INSERT_ID(d_next_o_id + 1) WHERE d_w_id = p_w AND d_id = p_d;
    SELECT LAST_INSERT_ID() - 1, d_tax INTO v_o, v_d_tax FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(*) INTO v_remote FROM JSON_TABLE(p_supply, '$[*]' COLUMNS (w int PATH '$')) AS j WHERE j.w <> p_w;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (v_o, p_d, p_w, p_c, CURRENT_TIMESTAMP, NULL, v_lines, CASE WHEN v_remote = 0 THEN 1 ELSE 0 END);
    WHILE v_k < v_lines DO
      SET v_i = JSON_VALUE(p_items, CONCAT('$[', v_k, ']'));
      SET v_s = JSON_VALUE(p_supply, CONCAT('$[', v_k, ']'));
      SET v_q = JSON_VALUE(p_quantity, CONCAT('$[', v_k, ']'));
      SELECT i_price INTO v_price FROM item WHERE i_id = v_i;
      SELECT s_quantity, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END INTO v_stock, v_dist FROM stock WHERE s_w_id = v_s AND s_i_id = v_i FOR UPDATE;
      IF v_stock >= v_q + 10 THEN
        SET v_stock = v_stock - v_q;
      ELSE
        SET v_stock = v_stock - v_q + 91;
      END IF;
      UPDATE stock SET s_quantity = v_stock, s_ytd = s_ytd + v_q, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN v_s = p_w THEN 0 ELSE 1 END WHERE s_w_id = v_s AND s_i_id = v_i;
      SET v_amount = round(v_q * v_price, 2);
      SET v_total = v_total + v_amount;
      SET v_k = v_k + 1;
      INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (v_o, p_d, p_w, v_k, v_i, v_s, NULL, v_q, v_amount, v_dist);
    END WHILE;
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
    COMMIT;
    SELECT v_o AS order_id, v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax) AS order_total;
  END IF;
END;

CREATE PROCEDURE tpcc_payment(IN p_w int, IN p_d int, IN p_c_w int, IN p_c_d int, IN p_c int, IN p_last varchar(16), IN p_amount decimal(6,2))
BEGIN
  DECLARE v_c int DEFAULT p_c;
  DECLARE v_w_name varchar(10);
  DECLARE v_d_name varchar(10);
  DECLARE v_credit char(2);
  DECLARE v_data varchar(500);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
  SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w AND d_id = p_d;
  IF p_c = 0 THEN
    CALL tpcc_customer_by_name(p_c_w, p_c_d, p_last, v_c);
  END IF;
  SELECT c_credit INTO v_credit FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
  IF v_credit = 'BC' THEN
    SELECT c_data INTO v_data FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    SET v_data = LEFT(CONCAT(v_c, ' ', p_c_d, ' ', p_c_w, ' ', p_d, ' ', p_w, ' ', p_amount, '|', v_data), 500);
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1, c_data = v_data WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  ELSE
    UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (v_c, p_c_d, p_c_w, p_d, p_w, CURRENT_TIMESTAMP, p_amount, LEFT(CONCAT(v_w_name, '    ', v_d_name), 24));
  COMMIT;
  SELECT v_c AS customer;
END;

CREATE PROCEDURE tpcc_order_status(IN p_w int, IN p_d int, IN p_c int, IN p_last varchar(16))
BEGIN
  DECLARE v_c int DEFAULT p_c;
  DECLARE v_balance decimal(12,2);
  DECLARE v_first varchar(16);
  DECLARE v_middle char(2);
  DECLARE v_last varchar(16);
  DECLARE v_o int DEFAULT NULL;
  DECLARE v_entry datetime;
  DECLARE v_carrier int;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  IF p_c = 0 THEN
    CALL tpcc_customer_by_name(p_w, p_d, p_last, v_c);
  END IF;
  SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
  SELECT o_id, o_entry_d, o_carrier_id INTO v_o, v_entry, v_carrier FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
  SELECT ol_i_id AS item, ol_supply_w_id AS supply_w, ol_quantity AS quantity, ol_amount AS amount, ol_delivery_d AS delivered FROM order_line WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
  COMMIT;
END;

CREATE PROCEDURE tpcc_delivery(IN p_w int, IN p_carrier int)
BEGIN
  DECLARE v_d int DEFAULT 0;
  DECLARE v_o int;
  DECLARE v_c int;
  DECLARE v_sum decimal(12,2);
  DECLARE v_done int DEFAULT 0;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  districts: WHILE v_d < 10 DO
    SET v_d = v_d + 1;
    SELECT min(no_o_id) INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d;
    IF v_o IS NULL THEN
      ITERATE districts;
    END IF;
    DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
    IF ROW_COUNT() = 0 THEN
      ITERATE districts;
    END IF;
    SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
    UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
    UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
    SELECT COALESCE(sum(ol_amount), 0) INTO v_sum FROM order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
    UPDATE customer SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
    SET v_done = v_done + 1;
  END WHILE;
  COMMIT;
  SELECT v_done AS delivered;
END;

CREATE PROCEDURE tpcc_stock_level(IN p_w int, IN p_d int, IN p_threshold int)
BEGIN
  DECLARE v_next int;
  DECLARE v_count int;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT count(DISTINCT s_i_id) INTO v_count FROM order_line, stock WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20 AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
  COMMIT;
  SELECT v_count AS low_stock;
END;

-- One CALL per transaction; each returns one result set, then the OK packet that ends the CALL.
-- name: call_new_order
CALL tpcc_new_order(?, ?, ?, ?, ?, ?)

-- name: call_payment
CALL tpcc_payment(?, ?, ?, ?, ?, ?, ?)

-- name: call_order_status
CALL tpcc_order_status(?, ?, ?, ?)

-- name: call_delivery
CALL tpcc_delivery(?, ?)

-- name: call_stock_level
CALL tpcc_stock_level(?, ?, ?)
