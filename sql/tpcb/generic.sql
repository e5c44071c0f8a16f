-- TPC-B (sort of) as pgbench defines it (src/bin/pgbench/pgbench.c, PostgreSQL 15+).
-- {aid_type} is int, or bigint from scale 20000 on; {fill} carries the fill factor
-- (or the storage engine); {plain} the options of tables pgbench gives no fill factor;
-- {tablespace} and {index_tablespace} pgbench's --tablespace and --index-tablespace.

-- name: drop
DROP TABLE IF EXISTS pgbench_history;
DROP TABLE IF EXISTS pgbench_tellers;
DROP TABLE IF EXISTS pgbench_accounts;
DROP TABLE IF EXISTS pgbench_branches;

-- name: create
CREATE {unlogged}TABLE pgbench_history (tid int, bid int, aid {aid_type}, delta int, mtime timestamp, filler char(22)){plain}{tablespace};
CREATE {unlogged}TABLE pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84)){fill}{tablespace};
CREATE {unlogged}TABLE pgbench_branches (bid int not null, bbalance int, filler char(88)){fill}{tablespace};

-- name: create_accounts
CREATE {unlogged}TABLE pgbench_accounts (aid {aid_type} not null, bid int, abalance int, filler char(84)){fill}{tablespace};

-- pgbench --partitions: the partitioned table, then one statement per partition (a dialect
-- whose partitioned table names its partitions in it has `{parts}` there instead), each
-- partition from accounts_part_METHOD with {n}, {from}, {to} (MINVALUE and MAXVALUE at the
-- ends), {upto} (`(to)`, or MAXVALUE alone), {count} and {rem}.
-- name: accounts_partitioned_range
CREATE {unlogged}TABLE pgbench_accounts (aid {aid_type} not null, bid int, abalance int, filler char(84)) PARTITION BY RANGE (aid){tablespace};

-- name: accounts_partitioned_hash
CREATE {unlogged}TABLE pgbench_accounts (aid {aid_type} not null, bid int, abalance int, filler char(84)) PARTITION BY HASH (aid){tablespace};

-- name: accounts_part_range
CREATE {unlogged}TABLE pgbench_accounts_{n} PARTITION OF pgbench_accounts FOR VALUES FROM ({from}) TO ({to}){fill};

-- name: accounts_part_hash
CREATE {unlogged}TABLE pgbench_accounts_{n} PARTITION OF pgbench_accounts FOR VALUES WITH (MODULUS {count}, REMAINDER {rem}){fill};

-- pgbench -I G: the rows made by the server (pgbench.c, initGenerateDataServerSide).
-- name: generate
TRUNCATE pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers;
INSERT INTO pgbench_branches (bid, bbalance) SELECT bid, 0 FROM generate_series(1, {branches}) AS bid;
INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT tid, (tid - 1) / 10 + 1, 0 FROM generate_series(1, {tellers}) AS tid;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT aid, (aid - 1) / 100000 + 1, 0, '' FROM generate_series(1, {accounts}) AS aid;

-- name: partitions_refused

-- name: analyze
VACUUM ANALYZE pgbench_branches;
VACUUM ANALYZE pgbench_tellers;
VACUUM ANALYZE pgbench_accounts;
VACUUM ANALYZE pgbench_history;

-- name: primary_keys
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid){index_tablespace};
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid){index_tablespace};
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid){index_tablespace};

-- name: foreign_keys
ALTER TABLE pgbench_tellers ADD CONSTRAINT pgbench_tellers_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches (bid);
ALTER TABLE pgbench_accounts ADD CONSTRAINT pgbench_accounts_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches (bid);
ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_bid_fkey FOREIGN KEY (bid) REFERENCES pgbench_branches (bid);
ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_tid_fkey FOREIGN KEY (tid) REFERENCES pgbench_tellers (tid);
ALTER TABLE pgbench_history ADD CONSTRAINT pgbench_history_aid_fkey FOREIGN KEY (aid) REFERENCES pgbench_accounts (aid);

-- name: foreign_keys_refused

-- name: unlogged_refused

-- name: tablespaces_refused

-- name: update_account
UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?

-- name: select_account
SELECT abalance FROM pgbench_accounts WHERE aid = ?

-- name: update_teller
UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?

-- name: update_branch
UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?

-- name: insert_history
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)

-- name: count_branches
SELECT count(*) FROM pgbench_branches

-- name: sums
SELECT (SELECT COALESCE(SUM(abalance), 0) FROM pgbench_accounts),
       (SELECT COALESCE(SUM(tbalance), 0) FROM pgbench_tellers),
       (SELECT COALESCE(SUM(bbalance), 0) FROM pgbench_branches),
       (SELECT COALESCE(SUM(delta), 0) FROM pgbench_history)

-- name: counts
SELECT (SELECT count(*) FROM pgbench_branches),
       (SELECT count(*) FROM pgbench_tellers),
       (SELECT count(*) FROM pgbench_accounts)
