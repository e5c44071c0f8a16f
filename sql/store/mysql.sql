-- The results store in a MariaDB or MySQL database (`--results mysql://...` or
-- `mariadb://...`) that several machines share: InnoDB tables compared byte for byte
-- (utf8mb4_bin, as the other dialects compare), keyed text as VARCHAR (TEXT cannot be a key),
-- double quotes for names (ANSI_QUOTES: "repeat" is a keyword); the version in a table of its
-- own; migrations and claims under a named lock of the server (GET_LOCK, named after the
-- database), taken inside the transaction and released after it. MariaDB commits each CREATE
-- and ALTER at once, so a migration cut halfway is finished by the next opener only where its
-- statements did not run yet: migrations add tables and columns, never rewrite rows.

-- name: words
id = BIGINT AUTO_INCREMENT PRIMARY KEY
text = LONGTEXT
key = VARCHAR(512)
bytes = LONGBLOB
table = ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
unhex = UNHEX(?)
reconnects = coalesce(JSON_EXTRACT(result, '$.reconnects'), 0)
restarts = coalesce(JSON_LENGTH(result, '$.server_restarts'), 0)
limiter = coalesce(JSON_UNQUOTE(JSON_EXTRACT(result, '$.verdict.limiter')), '')

-- name: session
SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES');

-- name: version
SELECT version FROM dbduel_store;

-- name: version table
CREATE TABLE IF NOT EXISTS dbduel_store (version BIGINT NOT NULL) ENGINE=InnoDB;

-- name: set version
DELETE FROM dbduel_store;
INSERT INTO dbduel_store (version) VALUES ({version});

-- name: lock
SELECT GET_LOCK(CONCAT('dbduel_store_', DATABASE()), 50);

-- name: unlock
SELECT RELEASE_LOCK(CONCAT('dbduel_store_', DATABASE()));

-- name: last id
SELECT LAST_INSERT_ID();
