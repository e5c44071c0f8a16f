-- SQLite: ALTER TABLE cannot add keys, so they are declared at creation (INTEGER PRIMARY KEY:
-- the rowid); its transactions are serializable already.

-- name: create
CREATE TABLE accounts (custid INTEGER PRIMARY KEY, name varchar(64) NOT NULL);
CREATE TABLE savings (custid INTEGER PRIMARY KEY REFERENCES accounts (custid), bal bigint NOT NULL);
CREATE TABLE checking (custid INTEGER PRIMARY KEY REFERENCES accounts (custid), bal bigint NOT NULL);

-- name: keys
CREATE INDEX idx_accounts_name ON accounts (name);

-- name: analyze
ANALYZE;

-- name: isolation_serializable
-- SQLite's transactions are serializable already.
