-- TPC-C on Firebird 3: no DROP TABLE IF EXISTS (the catalogue is asked first), no FOR UPDATE
-- (Firebird's own is not a lock; its WITH LOCK reports conflicts in the middle of a fetch,
-- which the wire client does not survive: the UPDATE that follows each of these reads meets
-- the same conflict and is retried), ROWS for LIMIT, RDB$DATABASE for FROM-less SELECTs, SET STATISTICS for ANALYZE,
-- no multi-row VALUES (an order's lines are one INSERT ... SELECT ... UNION ALL SELECT ...).
-- SET TRANSACTION is taken by dbduel's Firebird session for its later transactions; Firebird's
-- SERIALIZABLE is SNAPSHOT TABLE STABILITY. Each EXECUTE BLOCK stays on one line. At the end,
-- the five transactions as PSQL procedures (`--procedures`).

-- name: drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'ORDER_LINE')) THEN EXECUTE STATEMENT 'DROP TABLE order_line'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'NEW_ORDER')) THEN EXECUTE STATEMENT 'DROP TABLE new_order'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'ORDERS')) THEN EXECUTE STATEMENT 'DROP TABLE orders'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'HISTORY')) THEN EXECUTE STATEMENT 'DROP TABLE history'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'CUSTOMER')) THEN EXECUTE STATEMENT 'DROP TABLE customer'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'DISTRICT')) THEN EXECUTE STATEMENT 'DROP TABLE district'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'STOCK')) THEN EXECUTE STATEMENT 'DROP TABLE stock'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'ITEM')) THEN EXECUTE STATEMENT 'DROP TABLE item'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'WAREHOUSE')) THEN EXECUTE STATEMENT 'DROP TABLE warehouse'; END;

-- name: analyze
EXECUTE BLOCK AS DECLARE i VARCHAR(63); BEGIN FOR SELECT TRIM(RDB$INDEX_NAME) FROM RDB$INDICES WHERE RDB$RELATION_NAME IN ('ORDER_LINE', 'NEW_ORDER', 'ORDERS', 'HISTORY', 'CUSTOMER', 'DISTRICT', 'STOCK', 'ITEM', 'WAREHOUSE') INTO :i DO EXECUTE STATEMENT 'SET STATISTICS INDEX "' || i || '"'; END

-- name: isolation_serializable
SET TRANSACTION ISOLATION LEVEL SERIALIZABLE

-- name: no_stock
SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = ? AND s_i_id = ?

-- name: no_stocks
SELECT s_i_id, s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_w_id = ? AND s_i_id IN ({ids})

-- name: p_customer
SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?

-- name: os_last_order
SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC ROWS 1

-- name: cardinalities
SELECT (SELECT count(*) FROM warehouse), (SELECT count(*) FROM district), (SELECT count(*) FROM customer), (SELECT count(*) FROM item), (SELECT count(*) FROM stock) FROM RDB$DATABASE

-- name: no_order_lines
INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) {rows}

-- name: no_order_line_row
SELECT CAST(? AS INTEGER), CAST(? AS SMALLINT), CAST(? AS INTEGER), CAST(? AS SMALLINT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(NULL AS TIMESTAMP), CAST(? AS SMALLINT), CAST(? AS DECIMAL(6,2)), CAST(? AS CHAR(24)) FROM RDB$DATABASE

-- name: no_order_lines_joiner
UNION ALL

-- No RETURNING: a conflict met by UPDATE ... RETURNING comes back inside its output row, which
-- the wire client cannot read; no_district reads the new number in the same transaction.
-- name: no_district_bump
UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?

-- Firebird cannot tell the type of a bare parameter in a CASE branch.
-- name: no_stock_update_case
WHEN CAST(? AS INTEGER) THEN CAST(? AS INTEGER)

-- The five transactions as PSQL stored procedures (`--procedures`); see generic.sql. Each is
-- selectable (`SELECT ... FROM tpcc_x(...)`, ending in SUSPEND), so a call is an ordinary
-- SELECT in the session's autocommit transaction, and an error raised inside (update
-- conflict, deadlock, lock conflict) reaches the client as the same statement's error, in the
-- same words, with "At procedure ..." appended. Reads are plain where the PostgreSQL
-- functions lock, as in the client-side statements above. Item lists travel as text
-- '{1,2,3}', as on PostgreSQL, and are cut at the commas (PSQL has no arrays). A customer
-- name that matches nobody raises the exception tpcc_no_customer. An UPDATE of a row that must
-- exist that changes none raises dbduel_missed_row, which dbduel counts as missed_row and
-- retries: Firebird 3.0.11 has been seen to let an UPDATE that waited on a hot row match no row
-- without an error (docs/connecting.md), which would commit the Payment in part.
-- name: procedures_drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_NEW_ORDER')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_new_order'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_PAYMENT')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_payment'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_ORDER_STATUS')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_order_status'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_DELIVERY')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_delivery'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_STOCK_LEVEL')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_stock_level'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$PROCEDURES WHERE RDB$PROCEDURE_NAME = 'TPCC_CUSTOMER_BY_NAME')) THEN EXECUTE STATEMENT 'DROP PROCEDURE tpcc_customer_by_name'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$EXCEPTIONS WHERE RDB$EXCEPTION_NAME = 'TPCC_NO_CUSTOMER')) THEN EXECUTE STATEMENT 'DROP EXCEPTION tpcc_no_customer'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$EXCEPTIONS WHERE RDB$EXCEPTION_NAME = 'DBDUEL_MISSED_ROW')) THEN EXECUTE STATEMENT 'DROP EXCEPTION dbduel_missed_row'; END;

-- An isql-style script: the wire protocol takes one statement at a time, and dbduel's Firebird
-- session runs a text that opens with SET TERM statement by statement, as isql does.
-- name: procedures
SET TERM ^ ;
CREATE EXCEPTION tpcc_no_customer 'no customer named @1 in warehouse @2, district @3'^
CREATE EXCEPTION dbduel_missed_row 'UPDATE @1 matched @2 rows instead of 1; the transaction is rolled back'^

CREATE PROCEDURE tpcc_customer_by_name (p_w INTEGER, p_d INTEGER, p_last VARCHAR(16)) RETURNS (c INTEGER)
AS
  DECLARE v_n INTEGER;
BEGIN
  SELECT count(*) FROM customer WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_last = :p_last INTO :v_n;
  IF (v_n = 0) THEN
    EXCEPTION tpcc_no_customer USING (p_last, p_w, p_d);
  v_n = (v_n + 1) / 2;
  SELECT c_id FROM customer WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_last = :p_last ORDER BY c_first ROWS :v_n TO :v_n INTO :c;
END^

CREATE PROCEDURE tpcc_new_order (p_w INTEGER, p_d INTEGER, p_c INTEGER, p_items VARCHAR(200), p_supply VARCHAR(200), p_quantity VARCHAR(200)) RETURNS (order_id INTEGER, order_total DECIMAL(18,2))
AS
  DECLARE v_lines INTEGER = 0;
  DECLARE v_k INTEGER;
  DECLARE v_at INTEGER;
  DECLARE v_items VARCHAR(200);
  DECLARE v_supply VARCHAR(200);
  DECLARE v_quantity VARCHAR(200);
  DECLARE v_i INTEGER;
  DECLARE v_s INTEGER;
  DECLARE v_q INTEGER;
  DECLARE v_all_local SMALLINT = 1;
  DECLARE v_w_tax DECIMAL(4,4);
  DECLARE v_d_tax DECIMAL(4,4);
  DECLARE v_discount DECIMAL(4,4);
  DECLARE v_price DECIMAL(5,2);
  DECLARE v_stock INTEGER;
  DECLARE v_dist CHAR(24);
  DECLARE v_amount DECIMAL(6,2);
  DECLARE v_total DECIMAL(18,2) = 0;
BEGIN
  SELECT w_tax FROM warehouse WHERE w_id = :p_w INTO :v_w_tax;
  SELECT c_discount FROM customer WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_id = :p_c INTO :v_discount;
  v_items = SUBSTRING(p_items FROM 2 FOR CHAR_LENGTH(p_items) - 2) || ',';
  v_supply = SUBSTRING(p_supply FROM 2 FOR CHAR_LENGTH(p_supply) - 2) || ',';
  WHILE (v_items <> '') DO
  BEGIN
    v_at = POSITION(',' IN v_items);
    v_i = CAST(LEFT(v_items, v_at - 1) AS INTEGER);
    v_items = SUBSTRING(v_items FROM v_at + 1);
    v_at = POSITION(',' IN v_supply);
    IF (CAST(LEFT(v_supply, v_at - 1) AS INTEGER) <> p_w) THEN
      v_all_local = 0;
    v_supply = SUBSTRING(v_supply FROM v_at + 1);
    v_lines = v_lines + 1;
    IF (NOT EXISTS(SELECT 1 FROM item WHERE i_id = :v_i)) THEN
    BEGIN
      order_id = 0;
      order_total = 0;
      SUSPEND;
      EXIT;
    END
  END
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :p_w AND d_id = :p_d RETURNING d_next_o_id - 1, d_tax INTO :order_id, :v_d_tax;
  IF (ROW_COUNT <> 1) THEN
    EXCEPTION dbduel_missed_row USING ('district', ROW_COUNT);
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (:order_id, :p_d, :p_w, :p_c, CURRENT_TIMESTAMP, NULL, :v_lines, :v_all_local);
  v_items = SUBSTRING(p_items FROM 2 FOR CHAR_LENGTH(p_items) - 2) || ',';
  v_supply = SUBSTRING(p_supply FROM 2 FOR CHAR_LENGTH(p_supply) - 2) || ',';
  v_quantity = SUBSTRING(p_quantity FROM 2 FOR CHAR_LENGTH(p_quantity) - 2) || ',';
  v_k = 0;
  WHILE (v_k < v_lines) DO
  BEGIN
    v_k = v_k + 1;
    v_at = POSITION(',' IN v_items);
    v_i = CAST(LEFT(v_items, v_at - 1) AS INTEGER);
    v_items = SUBSTRING(v_items FROM v_at + 1);
    v_at = POSITION(',' IN v_supply);
    v_s = CAST(LEFT(v_supply, v_at - 1) AS INTEGER);
    v_supply = SUBSTRING(v_supply FROM v_at + 1);
    v_at = POSITION(',' IN v_quantity);
    v_q = CAST(LEFT(v_quantity, v_at - 1) AS INTEGER);
    v_quantity = SUBSTRING(v_quantity FROM v_at + 1);
    SELECT i_price FROM item WHERE i_id = :v_i INTO :v_price;
    SELECT s_quantity, CASE :p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END FROM stock WHERE s_w_id = :v_s AND s_i_id = :v_i INTO :v_stock, :v_dist;
    IF (v_stock >= v_q + 10) THEN
      v_stock = v_stock - v_q;
    ELSE
      v_stock = v_stock - v_q + 91;
    UPDATE stock SET s_quantity = :v_stock, s_ytd = s_ytd + :v_q, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN :v_s = :p_w THEN 0 ELSE 1 END WHERE s_w_id = :v_s AND s_i_id = :v_i;
    IF (ROW_COUNT <> 1) THEN
      EXCEPTION dbduel_missed_row USING ('stock', ROW_COUNT);
    v_amount = ROUND(v_q * v_price, 2);
    v_total = v_total + v_amount;
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES (:order_id, :p_d, :p_w, :v_k, :v_i, :v_s, NULL, :v_q, :v_amount, :v_dist);
  END
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (:order_id, :p_d, :p_w);
  order_total = v_total * (1 - v_discount) * (1 + v_w_tax + v_d_tax);
  SUSPEND;
END^

CREATE PROCEDURE tpcc_payment (p_w INTEGER, p_d INTEGER, p_c_w INTEGER, p_c_d INTEGER, p_c INTEGER, p_last VARCHAR(16), p_amount DECIMAL(6,2)) RETURNS (customer INTEGER)
AS
  DECLARE v_w_name VARCHAR(10);
  DECLARE v_d_name VARCHAR(10);
  DECLARE v_credit CHAR(2);
  DECLARE v_data VARCHAR(500);
BEGIN
  customer = p_c;
  UPDATE warehouse SET w_ytd = w_ytd + :p_amount WHERE w_id = :p_w;
  IF (ROW_COUNT <> 1) THEN
    EXCEPTION dbduel_missed_row USING ('warehouse', ROW_COUNT);
  SELECT w_name FROM warehouse WHERE w_id = :p_w INTO :v_w_name;
  UPDATE district SET d_ytd = d_ytd + :p_amount WHERE d_w_id = :p_w AND d_id = :p_d;
  IF (ROW_COUNT <> 1) THEN
    EXCEPTION dbduel_missed_row USING ('district', ROW_COUNT);
  SELECT d_name FROM district WHERE d_w_id = :p_w AND d_id = :p_d INTO :v_d_name;
  IF (p_c = 0) THEN
    EXECUTE PROCEDURE tpcc_customer_by_name(:p_c_w, :p_c_d, :p_last) RETURNING_VALUES :customer;
  SELECT c_credit FROM customer WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :customer INTO :v_credit;
  IF (v_credit = 'BC') THEN
  BEGIN
    SELECT c_data FROM customer WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :customer INTO :v_data;
    v_data = LEFT(customer || ' ' || p_c_d || ' ' || p_c_w || ' ' || p_d || ' ' || p_w || ' ' || p_amount || '|' || v_data, 500);
    UPDATE customer SET c_balance = c_balance - :p_amount, c_ytd_payment = c_ytd_payment + :p_amount, c_payment_cnt = c_payment_cnt + 1, c_data = :v_data WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :customer;
    IF (ROW_COUNT <> 1) THEN
      EXCEPTION dbduel_missed_row USING ('customer', ROW_COUNT);
  END
  ELSE
  BEGIN
    UPDATE customer SET c_balance = c_balance - :p_amount, c_ytd_payment = c_ytd_payment + :p_amount, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = :p_c_w AND c_d_id = :p_c_d AND c_id = :customer;
    IF (ROW_COUNT <> 1) THEN
      EXCEPTION dbduel_missed_row USING ('customer', ROW_COUNT);
  END
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (:customer, :p_c_d, :p_c_w, :p_d, :p_w, CURRENT_TIMESTAMP, :p_amount, LEFT(:v_w_name || '    ' || :v_d_name, 24));
  SUSPEND;
END^

CREATE PROCEDURE tpcc_order_status (p_w INTEGER, p_d INTEGER, p_c INTEGER, p_last VARCHAR(16)) RETURNS (item INTEGER, supply_w INTEGER, quantity INTEGER, amount DECIMAL(6,2), delivered TIMESTAMP)
AS
  DECLARE v_c INTEGER;
  DECLARE v_balance DECIMAL(12,2);
  DECLARE v_first VARCHAR(16);
  DECLARE v_middle CHAR(2);
  DECLARE v_last VARCHAR(16);
  DECLARE v_o INTEGER;
  DECLARE v_entry TIMESTAMP;
  DECLARE v_carrier INTEGER;
BEGIN
  v_c = p_c;
  IF (p_c = 0) THEN
    EXECUTE PROCEDURE tpcc_customer_by_name(:p_w, :p_d, :p_last) RETURNING_VALUES :v_c;
  SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = :p_w AND c_d_id = :p_d AND c_id = :v_c INTO :v_balance, :v_first, :v_middle, :v_last;
  SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = :p_w AND o_d_id = :p_d AND o_c_id = :v_c ORDER BY o_id DESC ROWS 1 INTO :v_o, :v_entry, :v_carrier;
  IF (v_o IS NOT NULL) THEN
    FOR SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = :p_w AND ol_d_id = :p_d AND ol_o_id = :v_o INTO :item, :supply_w, :quantity, :amount, :delivered DO
      SUSPEND;
END^

CREATE PROCEDURE tpcc_delivery (p_w INTEGER, p_carrier INTEGER) RETURNS (delivered INTEGER)
AS
  DECLARE v_d INTEGER = 0;
  DECLARE v_o INTEGER;
  DECLARE v_c INTEGER;
  DECLARE v_sum DECIMAL(18,2);
BEGIN
  delivered = 0;
  WHILE (v_d < 10) DO
  BEGIN
    v_d = v_d + 1;
    SELECT min(no_o_id) FROM new_order WHERE no_w_id = :p_w AND no_d_id = :v_d INTO :v_o;
    IF (v_o IS NULL) THEN
      CONTINUE;
    DELETE FROM new_order WHERE no_w_id = :p_w AND no_d_id = :v_d AND no_o_id = :v_o;
    IF (ROW_COUNT = 0) THEN
      CONTINUE;
    SELECT o_c_id FROM orders WHERE o_w_id = :p_w AND o_d_id = :v_d AND o_id = :v_o INTO :v_c;
    UPDATE orders SET o_carrier_id = :p_carrier WHERE o_w_id = :p_w AND o_d_id = :v_d AND o_id = :v_o;
    IF (ROW_COUNT <> 1) THEN
      EXCEPTION dbduel_missed_row USING ('orders', ROW_COUNT);
    UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = :p_w AND ol_d_id = :v_d AND ol_o_id = :v_o;
    SELECT COALESCE(sum(ol_amount), 0) FROM order_line WHERE ol_w_id = :p_w AND ol_d_id = :v_d AND ol_o_id = :v_o INTO :v_sum;
    UPDATE customer SET c_balance = c_balance + :v_sum, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = :p_w AND c_d_id = :v_d AND c_id = :v_c;
    IF (ROW_COUNT <> 1) THEN
      EXCEPTION dbduel_missed_row USING ('customer', ROW_COUNT);
    delivered = delivered + 1;
  END
  SUSPEND;
END^

CREATE PROCEDURE tpcc_stock_level (p_w INTEGER, p_d INTEGER, p_threshold INTEGER) RETURNS (low_stock INTEGER)
AS
  DECLARE v_next INTEGER;
BEGIN
  SELECT d_next_o_id FROM district WHERE d_w_id = :p_w AND d_id = :p_d INTO :v_next;
  SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = :p_w AND ol_d_id = :p_d AND ol_o_id < :v_next AND ol_o_id >= :v_next - 20 AND s_w_id = :p_w AND s_i_id = ol_i_id AND s_quantity < :p_threshold INTO :low_stock;
  SUSPEND;
END^
SET TERM ; ^

-- One SELECT per transaction; the procedures' parameters carry the types.
-- name: call_new_order
SELECT order_id FROM tpcc_new_order(?, ?, ?, ?, ?, ?)

-- name: call_payment
SELECT customer FROM tpcc_payment(?, ?, ?, ?, ?, ?, ?)

-- name: call_order_status
SELECT item, supply_w, quantity, amount, delivered FROM tpcc_order_status(?, ?, ?, ?)

-- name: call_delivery
SELECT delivered FROM tpcc_delivery(?, ?)

-- name: call_stock_level
SELECT low_stock FROM tpcc_stock_level(?, ?, ?)
