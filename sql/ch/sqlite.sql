-- CH-benCHmark on SQLite: `%` for mod (SQLite's mod() needs its math functions, not always built
-- in), unicode() for ascii(), the year as the first four characters of the timestamp's ISO text
-- (TPC-C's timestamps are stored so), one ANALYZE, and LIKE made case-sensitive on the session
-- (SQLite's is not, and has no operator that is).

-- name: expr_supplier
((s_w_id * s_i_id) % 10000)

-- name: expr_code
unicode({text})

-- name: expr_year
CAST(substr({timestamp}, 1, 4) AS integer)

-- name: analyze
ANALYZE;

-- name: session
PRAGMA case_sensitive_like = ON;
