-- Firebird 3: no DROP TABLE IF EXISTS (an EXECUTE BLOCK looks in the catalogue first), no
-- FROM-less SELECT (RDB$DATABASE is the one-row table), and SET STATISTICS recomputes each
-- index's selectivity instead of ANALYZE.
-- `--isolation serializable` runs at SNAPSHOT here: Firebird's SERIALIZABLE is SNAPSHOT TABLE
-- STABILITY, which locks whole tables, and SmallBank's mix (each transaction reads a table
-- another then writes) deadlocks in it until the lock manager's timeout. SNAPSHOT is snapshot
-- isolation: no lost update (a concurrent update is an update conflict, retried), write skew
-- possible; the result's isolation line says it ran at CONCURRENCY.

-- name: drop
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'CHECKING')) THEN EXECUTE STATEMENT 'DROP TABLE checking'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'SAVINGS')) THEN EXECUTE STATEMENT 'DROP TABLE savings'; END;
EXECUTE BLOCK AS BEGIN IF (EXISTS(SELECT 1 FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'ACCOUNTS')) THEN EXECUTE STATEMENT 'DROP TABLE accounts'; END;

-- name: analyze
EXECUTE BLOCK AS DECLARE i VARCHAR(63); BEGIN FOR SELECT TRIM(RDB$INDEX_NAME) FROM RDB$INDICES WHERE RDB$RELATION_NAME IN ('ACCOUNTS', 'SAVINGS', 'CHECKING') INTO :i DO EXECUTE STATEMENT 'SET STATISTICS INDEX "' || i || '"'; END

-- name: isolation_serializable
SET TRANSACTION ISOLATION LEVEL SNAPSHOT

-- name: counts
SELECT (SELECT count(*) FROM accounts),
       (SELECT count(*) FROM savings),
       (SELECT count(*) FROM checking)
FROM RDB$DATABASE

-- name: total
SELECT (SELECT COALESCE(SUM(bal), 0) FROM savings) + (SELECT COALESCE(SUM(bal), 0) FROM checking)
FROM RDB$DATABASE
