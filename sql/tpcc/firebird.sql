-- TPC-C on Firebird 3: no DROP TABLE IF EXISTS (the catalogue is asked first), no FOR UPDATE
-- (Firebird's own is not a lock; its WITH LOCK reports conflicts in the middle of a fetch,
-- which the wire client does not survive: the UPDATE that follows each of these reads meets
-- the same conflict and is retried), ROWS for LIMIT, RDB$DATABASE for FROM-less SELECTs, SET STATISTICS for ANALYZE,
-- no multi-row VALUES (an order's lines are one INSERT ... SELECT ... UNION ALL SELECT ...).
-- SET TRANSACTION is taken by dbduel's Firebird session for its later transactions; Firebird's
-- SERIALIZABLE is SNAPSHOT TABLE STABILITY. Each EXECUTE BLOCK stays on one line.

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

-- name: procedures_refused
TPC-C stored procedures on Firebird are not provided by this version of dbduel: drop --procedures
