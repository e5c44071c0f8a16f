-- YCSB's usertable as its JDBC binding defines it (YCSB_KEY and FIELD0..FIELDn), and the
-- statements of CoreWorkload's operations. {table} is the `table` property, {TABLE} the same
-- in capitals, {columns} the field columns with their types, {fields} the field names.

-- name: drop
DROP TABLE IF EXISTS {table};

-- name: create
CREATE TABLE {table} (YCSB_KEY varchar(255) NOT NULL PRIMARY KEY, {columns}){plain};

-- name: field_type
varchar({fieldlength})

-- name: analyze
ANALYZE {table};

-- name: read
SELECT {fields} FROM {table} WHERE YCSB_KEY = ?

-- name: scan
SELECT {fields} FROM {table} WHERE YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?

-- name: update
UPDATE {table} SET {assignments} WHERE YCSB_KEY = ?

-- name: insert
INSERT INTO {table} (YCSB_KEY, {fields}) VALUES (?, {placeholders})

-- name: count
SELECT count(*) FROM {table}

-- name: keys
SELECT YCSB_KEY FROM {table}

-- name: length_of
char_length
