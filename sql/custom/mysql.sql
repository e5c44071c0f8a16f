-- MariaDB/MySQL: DATETIME (TIMESTAMP updates itself and ends in 2038); ANALYZE TABLE.

-- name: type_timestamp
DATETIME

-- name: analyze
ANALYZE TABLE {table}
