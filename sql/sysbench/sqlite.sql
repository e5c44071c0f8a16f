-- SQLite: an INTEGER primary key is the rowid, numbered after the largest id by itself.

-- name: id_def
INTEGER

-- name: after_load
