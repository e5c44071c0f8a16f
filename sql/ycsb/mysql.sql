-- MariaDB/MySQL: the key in ASCII with binary collation, so that MyISAM and Aria (whose keys
-- hold at most 1000 bytes) take it and scans order keys as the other engines do;
-- ANALYZE TABLE.

-- name: create
CREATE TABLE {table} (YCSB_KEY varchar(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY, {columns}){plain};

-- name: analyze
ANALYZE TABLE {table};
