-- MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary key, so
-- adding it after loading would rebuild the table); ANALYZE TABLE instead of VACUUM.

-- name: create
CREATE TABLE accounts (custid bigint NOT NULL PRIMARY KEY, name varchar(64) NOT NULL){plain};
CREATE TABLE savings (custid bigint NOT NULL PRIMARY KEY, bal bigint NOT NULL){plain};
CREATE TABLE checking (custid bigint NOT NULL PRIMARY KEY, bal bigint NOT NULL){plain};

-- name: keys
CREATE INDEX idx_accounts_name ON accounts (name);
ALTER TABLE savings ADD FOREIGN KEY (custid) REFERENCES accounts (custid);
ALTER TABLE checking ADD FOREIGN KEY (custid) REFERENCES accounts (custid);

-- name: analyze
ANALYZE TABLE accounts, savings, checking;

-- name: isolation_serializable
SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;
