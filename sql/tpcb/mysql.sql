-- MariaDB/MySQL: primary keys declared at creation (InnoDB clusters rows by primary key, so
-- adding it after loading would rebuild the table); DATETIME avoids TIMESTAMP's automatic
-- update semantics; ANALYZE TABLE instead of VACUUM.

-- name: create
CREATE TABLE pgbench_history (tid int, bid int, aid {aid_type}, delta int, mtime datetime, filler char(22)){plain};
CREATE TABLE pgbench_tellers (tid int not null primary key, bid int, tbalance int, filler char(84)){fill};
CREATE TABLE pgbench_branches (bid int not null primary key, bbalance int, filler char(88)){fill};

-- name: create_accounts
CREATE TABLE pgbench_accounts (aid {aid_type} not null primary key, bid int, abalance int, filler char(84)){fill};

-- name: accounts_partitioned_range
CREATE TABLE pgbench_accounts (aid {aid_type} not null primary key, bid int, abalance int, filler char(84)){fill} PARTITION BY RANGE (aid) ({parts});

-- name: accounts_partitioned_hash
CREATE TABLE pgbench_accounts (aid {aid_type} not null primary key, bid int, abalance int, filler char(84)){fill} PARTITION BY HASH (aid) PARTITIONS {count};

-- name: accounts_part_range
PARTITION p{n} VALUES LESS THAN {upto}

-- name: accounts_part_hash


-- name: primary_keys

-- name: unlogged_refused
MariaDB and MySQL have no unlogged tables: drop --unlogged-tables (a table's engine is its durability: --table-engine MyISAM or Aria are not crash-safe as InnoDB is)

-- name: tablespaces_refused
MariaDB has no tablespace to put a table in (and dbduel puts none of MySQL's tables in one): drop --tablespace and --index-tablespace (a table's files go where the server's datadir says)

-- name: generate
TRUNCATE TABLE pgbench_history;
TRUNCATE TABLE pgbench_accounts;
TRUNCATE TABLE pgbench_tellers;
TRUNCATE TABLE pgbench_branches;
INSERT INTO pgbench_branches (bid, bbalance) SELECT seq, 0 FROM seq_1_to_{branches};
INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT seq, (seq - 1) DIV 10 + 1, 0 FROM seq_1_to_{tellers};
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT seq, (seq - 1) DIV 100000 + 1, 0, '' FROM seq_1_to_{accounts};

-- name: analyze
ANALYZE TABLE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history;
