-- CH-benCHmark on Firebird 3: no DROP ... IF EXISTS (the catalogue is asked first), SET
-- STATISTICS for ANALYZE, RDB$DATABASE for a FROM-less SELECT, ascii_val() for ascii(),
-- SUBSTRING ... FROM ... FOR for substr(), and averages over doubles (its AVG keeps its
-- argument's scale: the average of a smallint is a whole number). Each EXECUTE BLOCK stays on one line.

-- name: drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'REVENUE0')) THEN EXECUTE STATEMENT 'DROP VIEW revenue0'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'SUPPLIER')) THEN EXECUTE STATEMENT 'DROP TABLE supplier'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'NATION')) THEN EXECUTE STATEMENT 'DROP TABLE nation'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'REGION')) THEN EXECUTE STATEMENT 'DROP TABLE region'; END;

-- name: analyze
EXECUTE BLOCK AS DECLARE i VARCHAR(63); BEGIN FOR SELECT TRIM(RDB$INDEX_NAME) FROM RDB$INDICES WHERE RDB$RELATION_NAME IN ('SUPPLIER', 'NATION', 'REGION') INTO :i DO EXECUTE STATEMENT 'SET STATISTICS INDEX "' || i || '"'; END

-- name: count
SELECT (SELECT count(*) FROM region), (SELECT count(*) FROM nation), (SELECT count(*) FROM supplier), (SELECT count(*) FROM supplier WHERE su_nationkey NOT IN (SELECT n_nationkey FROM nation)), (SELECT count(*) FROM nation WHERE n_regionkey NOT IN (SELECT r_regionkey FROM region)) FROM RDB$DATABASE

-- name: expr_code
ascii_val({text})

-- name: expr_avg
avg(CAST({value} AS double precision))

-- name: expr_prefix
substring({text} from 1 for {length})

-- Query 15 with the view's maximum as a derived table of one row joined in: Firebird 3 computes
-- the scalar subquery again for each of the view's rows (more than 20 s at one warehouse, 3 s so).
-- name: q15
SELECT su_suppkey, su_name, su_address, su_phone, total_revenue
FROM supplier, revenue0, (SELECT max(total_revenue) AS top_revenue FROM revenue0) m
WHERE su_suppkey = supplier_no AND total_revenue = m.top_revenue
ORDER BY su_suppkey

-- Query 20 with its IN as a join to the distinct suppliers: Firebird 3 turns IN into a subquery
-- run again for each supplier (more than 20 s at one warehouse, 0.4 s so). The same rows.
-- name: q20
SELECT su_name, su_address
FROM supplier, nation,
     (SELECT DISTINCT {supplier} AS supplier_no
      FROM stock, order_line
      WHERE s_i_id IN (SELECT i_id FROM item WHERE i_data {like} 'co%')
      AND ol_i_id = s_i_id AND ol_delivery_d > '2010-05-23 12:00:00'
      GROUP BY s_i_id, s_w_id, s_quantity
      HAVING 2 * s_quantity > sum(ol_quantity)) w
WHERE su_suppkey = w.supplier_no AND su_nationkey = n_nationkey AND n_name = 'Germany'
ORDER BY su_name
