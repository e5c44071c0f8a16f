-- Declarative workloads (src/workload/custom/): column types and DDL; PostgreSQL as written.
-- {table}/{TABLE} a table's name (as written / upper case), {n} a length.

-- name: type_int
INTEGER

-- name: type_bigint
BIGINT

-- name: type_double
DOUBLE PRECISION

-- name: type_text
TEXT

-- name: type_timestamp
TIMESTAMP

-- name: type_varchar
VARCHAR({n})

-- name: type_char
CHAR({n})

-- name: drop_table
DROP TABLE IF EXISTS {table}

-- name: create_index
CREATE {unique}INDEX {index} ON {table} ({columns})

-- name: analyze
ANALYZE {table}

-- name: count_rows
SELECT count(*) FROM {table}

-- Rows whose foreign key finds no row in the referenced table.
-- name: orphans
SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM {ref_table} r WHERE r.{ref_column} = t.{column})
