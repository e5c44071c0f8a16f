-- CH-benCHmark on MariaDB and MySQL: ANALYZE TABLE for ANALYZE; LIKE BINARY for a case-sensitive
-- LIKE (TPC-C's tables take the server's case-insensitive collation).

-- name: analyze
ANALYZE TABLE region, nation, supplier;

-- name: expr_like
LIKE BINARY
