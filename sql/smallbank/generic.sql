-- SmallBank (Cahill, Röhm and Fekete, "Serializable Isolation for Snapshot Databases", SIGMOD
-- 2008 and TODS 34(4) 2009, section 6.1; SendPayment as H-Store and BenchBase add it).
-- Balances are whole cents in a BIGINT, so that the total-balance check is exact on every
-- engine (BenchBase keeps FLOAT dollars). {plain} carries the table options (the storage engine).

-- name: drop
DROP TABLE IF EXISTS checking;
DROP TABLE IF EXISTS savings;
DROP TABLE IF EXISTS accounts;

-- name: create
CREATE TABLE accounts (custid bigint NOT NULL, name varchar(64) NOT NULL){plain};
CREATE TABLE savings (custid bigint NOT NULL, bal bigint NOT NULL){plain};
CREATE TABLE checking (custid bigint NOT NULL, bal bigint NOT NULL){plain};

-- name: keys
ALTER TABLE accounts ADD PRIMARY KEY (custid);
ALTER TABLE savings ADD PRIMARY KEY (custid);
ALTER TABLE checking ADD PRIMARY KEY (custid);
CREATE INDEX idx_accounts_name ON accounts (name);
ALTER TABLE savings ADD FOREIGN KEY (custid) REFERENCES accounts (custid);
ALTER TABLE checking ADD FOREIGN KEY (custid) REFERENCES accounts (custid);

-- name: analyze
VACUUM ANALYZE accounts;
VACUUM ANALYZE savings;
VACUUM ANALYZE checking;

-- name: isolation_serializable
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE;

-- name: account_by_name
SELECT custid FROM accounts WHERE name = ?

-- name: account_by_id
SELECT custid, name FROM accounts WHERE custid = ?

-- name: savings_balance
SELECT bal FROM savings WHERE custid = ?

-- name: checking_balance
SELECT bal FROM checking WHERE custid = ?

-- name: savings_add
UPDATE savings SET bal = bal + ? WHERE custid = ?

-- name: checking_add
UPDATE checking SET bal = bal + ? WHERE custid = ?

-- name: savings_zero
UPDATE savings SET bal = 0 WHERE custid = ?

-- name: checking_zero
UPDATE checking SET bal = 0 WHERE custid = ?

-- name: customers
SELECT max(custid) + 1 FROM accounts

-- name: counts
SELECT (SELECT count(*) FROM accounts),
       (SELECT count(*) FROM savings),
       (SELECT count(*) FROM checking)

-- name: total
SELECT (SELECT COALESCE(SUM(bal), 0) FROM savings) + (SELECT COALESCE(SUM(bal), 0) FROM checking)

-- name: negative_savings
SELECT count(*) FROM savings WHERE bal < 0

-- name: ledgers
SELECT name, fact FROM dbduel_facts WHERE name LIKE 'smallbank.ledger.%'
