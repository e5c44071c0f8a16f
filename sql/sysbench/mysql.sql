-- MariaDB/MySQL: AUTO_INCREMENT ids (which move past loaded ids by themselves).

-- name: id_def
INTEGER NOT NULL AUTO_INCREMENT

-- name: after_load
