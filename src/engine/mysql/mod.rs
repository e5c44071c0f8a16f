//! MariaDB and MySQL over dbduel's own protocol connection (`wire.rs`): text or binary protocol, a
//! selectable storage engine (`--table-engine`: InnoDB, MyISAM, Aria), loading (`load.rs`), the
//! server's error numbers classified, the login's socket and password from MYSQL_UNIX_PORT and
//! MYSQL_PWD, and the server's counters (`stats.rs`).

use std::sync::Arc;
use std::time::Duration;

mod load;
mod statements;
mod stats;
mod wire;

use super::activity::{self, Activity};
use super::durability::{self, Durability, Level};
use super::login;
use super::tls::{Mode, Roots, Tls, TlsOptions};
use super::{
    Cancel, Counters, DbError, DbResult, Engine, EngineEntry, EngineOptions, ErrorClass, Load,
    LoadProgress, Protocol, RowSource, ServerInfo, Session, SocketHandle, StmtId, Value,
    connect_error, render_literals, split_placeholders,
};
use crate::dsn::Dsn;
use crate::error::Error;
use std::collections::BTreeMap;
use wire::{Address, Login, Prepared, Wire, WireError};

pub const ENTRY: EngineEntry = EngineEntry {
    name: "mysql",
    schemes: &["mysql", "mariadb"],
    about: "MariaDB or MySQL; --table-engine InnoDB (default), MyISAM or Aria",
    open,
    file: false,
    durability,
};

/// InnoDB flushes its log at each commit only with innodb_flush_log_at_trx_commit 1 (or
/// MariaDB's 3); the doublewrite buffer keeps pages whole; a binary log not synced at each
/// commit may lose commits; MyISAM and MEMORY tables are not crash-safe.
fn durability(settings: &BTreeMap<String, String>) -> Durability {
    let get = |k: &str| settings.get(k).map(|v| v.to_ascii_uppercase());
    let mut found = Vec::new();
    match get("innodb_flush_log_at_trx_commit").as_deref() {
        None => found.push(durability::unread("innodb_flush_log_at_trx_commit")),
        Some("1" | "3") => {}
        Some("2") => found.push((
            Level::NotDurable,
            "innodb_flush_log_at_trx_commit=2: a system crash or power loss loses up to a second of commits".into(),
        )),
        Some(v) => found.push((
            Level::NotDurable,
            format!("innodb_flush_log_at_trx_commit={v}: a server crash loses up to a second of commits"),
        )),
    }
    if matches!(get("innodb_doublewrite").as_deref(), Some("OFF" | "0")) {
        found.push((
            Level::Unsafe,
            "innodb_doublewrite=OFF: a power loss may leave torn pages".into(),
        ));
    }
    if get("innodb_flush_method").as_deref() == Some("NOSYNC") {
        found.push((
            Level::Unsafe,
            "innodb_flush_method=nosync: data files are never synced".into(),
        ));
    }
    let sync_binlog = get("sync_binlog").unwrap_or_default();
    if get("log_bin").as_deref() == Some("ON") && sync_binlog != "1" {
        found.push((
            Level::NotDurable,
            format!("binary log with sync_binlog={sync_binlog}: a crash may lose commits from it"),
        ));
    }
    let tables = get("table_engines").unwrap_or_default();
    for engine in ["MYISAM", "MEMORY"] {
        if tables.split(", ").any(|t| t == engine) {
            found.push((Level::Unsafe, format!("{engine} tables are not crash-safe")));
        }
    }
    if tables.split(", ").any(|t| t == "ARIA") {
        found.push((
            Level::Unknown,
            "Aria tables: dbduel does not judge their durability".into(),
        ));
    }
    Durability::of(found)
}

const TABLE_ENGINES: &[&str] = &["InnoDB", "MyISAM", "Aria"];

/// Settings that decide performance, read back from the server with every result.
const SETTINGS: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_flush_log_at_trx_commit",
    "innodb_log_file_size",
    "innodb_log_buffer_size",
    "innodb_flush_method",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "sync_binlog",
    "log_bin",
    "query_cache_type",
    "query_cache_size",
    "key_buffer_size",
    "aria_pagecache_buffer_size",
    "max_connections",
    "transaction_isolation",
    "tx_isolation",
    "default_storage_engine",
    "thread_handling",
    "sort_buffer_size",
    "table_open_cache",
    "performance_schema",
];

struct MySql {
    target: Address,
    database: Option<String>,
    password: Option<String>,
    address: String,
    user: String,
    protocol: Protocol,
    table_engine: &'static str,
    tls: Tls,
    connect_timeout: Duration,
    statement_timeout: Option<Duration>,
    lazy_begin: bool,
}

/// DSN parameters (also written with underscores), and the environment variable the mysql
/// client reads for one of them.
const PARAMS: &[(&str, &str)] = &[
    ("socket", "MYSQL_UNIX_PORT"),
    ("ssl-mode", ""),
    ("ssl-ca", ""),
    ("ssl-cert", ""),
    ("ssl-key", ""),
    ("connect-timeout", ""),
];

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    super::no_extended(protocol, "MariaDB/MySQL")?;
    let table_engine = match &opts.table_engine {
        None => "InnoDB",
        Some(name) => TABLE_ENGINES
            .iter()
            .copied()
            .find(|e| e.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "unknown --table-engine '{name}': use one of {}",
                    TABLE_ENGINES.join(", ")
                ))
            })?,
    };
    let mut dsn = dsn.clone();
    for (k, _) in dsn.params.iter_mut() {
        *k = k.replace('_', "-");
    }
    let dsn = &dsn;
    dsn.only_params("mysql", PARAMS.iter().map(|p| p.0))?;
    let get = |key: &str| login::param(dsn, key, PARAMS);
    let usage = |e: String| Error::Usage(format!("--dsn {dsn}: {e}"));
    let user = dsn.user.clone().unwrap_or_else(|| "root".into());
    let target = match get("socket") {
        Some(path) => Address::Socket(path.to_string()),
        None => Address::Tcp(
            dsn.host.clone().unwrap_or_else(|| "localhost".into()),
            dsn.port.unwrap_or(3306),
        ),
    };
    Ok(Box::new(MySql {
        target,
        database: Some(dsn.database.clone()).filter(|d| !d.is_empty()),
        password: dsn
            .password()
            .map(str::to_string)
            .or_else(|| std::env::var("MYSQL_PWD").ok()),
        address: match get("socket") {
            Some(path) => format!("socket {path}"),
            None => dsn.address(3306),
        },
        user,
        protocol,
        table_engine,
        tls: Tls::new(&tls_options(&get)?).map_err(usage)?,
        connect_timeout: login::connect_timeout(get("connect-timeout")).map_err(usage)?,
        statement_timeout: opts.statement_timeout,
        lazy_begin: opts.lazy_begin,
    }))
}

/// The mysql client's ssl-mode (PREFERRED by default; VERIFY_CA when only ssl-ca is given,
/// as MySQL 8's client does) and its files.
fn tls_options(get: &dyn Fn(&str) -> Option<String>) -> Result<TlsOptions, Error> {
    let ca = get("ssl-ca");
    let mode = match get("ssl-mode").map(|m| m.to_ascii_uppercase()).as_deref() {
        None if ca.is_some() => Mode::VerifyCa,
        None | Some("PREFERRED") => Mode::Prefer,
        Some("DISABLED") => Mode::Disable,
        Some("REQUIRED") => Mode::Require,
        Some("VERIFY_CA") => Mode::VerifyCa,
        Some("VERIFY_IDENTITY") => Mode::VerifyFull,
        Some(other) => {
            return Err(Error::Usage(format!(
                "ssl-mode '{other}': use DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
            )));
        }
    };
    let client = match (get("ssl-cert"), get("ssl-key")) {
        (Some(c), Some(k)) => Some((c.into(), k.into())),
        (None, None) => None,
        _ => {
            return Err(Error::Usage(
                "ssl-cert and ssl-key go together: give both".into(),
            ));
        }
    };
    Ok(TlsOptions {
        mode,
        roots: ca.map(|f| Roots::File(f.into())),
        client,
    })
}

impl Engine for MySql {
    fn name(&self) -> &'static str {
        "mysql"
    }
    fn dialect(&self) -> &'static str {
        "mysql"
    }
    fn embedded(&self) -> bool {
        false
    }
    fn multiplexed(&self) -> bool {
        true
    }
    /// A thread per client unless `-j` asks: with the server in a session of its own (as a
    /// service runs), MariaDB's clients made 28-42% more tps at 32 and 100 clients on a thread
    /// each than as coroutines, at less CPU a transaction (BENCHMARKS.md, "Many clients on few
    /// cores").
    fn shares_threads_unasked(&self) -> bool {
        false
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let login = Login {
            user: &self.user,
            password: self.password.as_deref(),
            database: self.database.as_deref(),
            tls: &self.tls,
        };
        let conn = Wire::connect(&self.target, &login, self.connect_timeout)
            .map_err(|e| match e {
                WireError::Io(io) => {
                    WireError::Io(login::explain_timeout(io, self.connect_timeout))
                }
                e => e,
            })
            .map_err(|e| {
                connect_error(
                    classify(&e, true),
                    "MariaDB/MySQL",
                    &self.address,
                    &self.user,
                )
            })?;
        let mut conn = conn;
        if let Some(t) = self.statement_timeout {
            conn.query(&timeout_setting(&conn, Some(t)), None)
                .map_err(|e| classify(&e, true))?;
        }
        // --lazy-begin: transactions begin with their first statement, as Connector/J's
        // setAutoCommit(false) makes them (`MySession::autocommit`).
        if self.lazy_begin {
            conn.query("SET autocommit = 0", None)
                .map_err(|e| classify(&e, true))?;
        }
        let door = Arc::new(SideDoor {
            target: self.target.clone(),
            user: self.user.clone(),
            password: self.password.clone(),
            tls: self.tls.clone(),
            timeout: Duration::from_secs(2),
            connection_id: conn.connection_id,
        });
        Ok(Box::new(MySession {
            conn,
            door,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            innodb_metrics: true,
            trx_unseen: None,
            activity_of: None,
            holders_refused: None,
            local_load: true,
            stats: stats::Parts::default(),
            lazy_begin: self.lazy_begin,
            in_txn: false,
            txn_sent: false,
        }))
    }
    fn table_options(&self, _fillfactor: Option<u32>) -> String {
        format!(" ENGINE={}", self.table_engine)
    }
    /// The processlist is built by walking every thread, and joined to INNODB_TRX: at 64
    /// clients, 5 samples a second cost MariaDB 2-4% of its throughput where 1 cost none
    /// that showed (BENCHMARKS.md, "The wait sampler's cost").
    fn activity_sessions_per_second(&self) -> Option<u32> {
        Some(64)
    }
}

enum MyStmt {
    Prepared(Prepared),
    Text(Vec<String>),
}

/// What a statement is to a session with autocommit off (--lazy-begin).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A SET (a variable, the next transaction's characteristics): begins no transaction.
    Set,
    /// START TRANSACTION or BEGIN with its options, sent as a statement: begins one.
    Begin,
    /// COMMIT or ROLLBACK sent as a statement (not ROLLBACK TO a savepoint): ends it.
    End,
    Other,
}

/// A statement's `Kind`, by its first words (no allocation: it runs for every text statement).
fn kind(sql: &str) -> Kind {
    let mut words = sql.split_whitespace();
    let (first, second) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let is = |word: &str, keyword: &str| word.eq_ignore_ascii_case(keyword);
    if is(first, "SET") && !second.is_empty() {
        Kind::Set
    } else if is(first, "BEGIN") || (is(first, "START") && is(second, "TRANSACTION")) {
        Kind::Begin
    } else if (is(first, "COMMIT") || is(first, "ROLLBACK")) && !is(second, "TO") {
        Kind::End
    } else {
        Kind::Other
    }
}

struct MySession {
    conn: Wire,
    /// How to reach the session from another thread (a canceller adds its socket's second
    /// handle when asked for: a session nobody cancels, as an idle connection, holds one file).
    door: Arc<SideDoor>,
    protocol: Protocol,
    /// Each prepared statement, and its `Kind`.
    stmts: Vec<(MyStmt, Kind)>,
    sql: String,
    /// Whether the observer may read information_schema.INNODB_METRICS (it needs PROCESS).
    innodb_metrics: bool,
    /// What `activity` does not see since the server would not give it INNODB_TRX (no
    /// PROCESS privilege, no InnoDB), and why; None while it reads it.
    trx_unseen: Option<String>,
    /// The session's current database (None: none) and its thread's id, read at `activity`'s
    /// first sample (None until then).
    activity_of: Option<(Option<String>, String)>,
    /// Why `activity` no longer asks INNODB_LOCK_WAITS who holds an awaited row lock (the
    /// server's refusal: MySQL 8 has no such table); None while it may.
    holders_refused: Option<String>,
    /// The parts of the counters' query (`stats.rs`) the server has not refused.
    stats: stats::Parts,
    /// Whether loads go through LOAD DATA LOCAL INFILE (until the server refuses one).
    local_load: bool,
    /// `--lazy-begin` (`EngineOptions::lazy_begin`): the session runs with autocommit off.
    lazy_begin: bool,
    /// Under --lazy-begin: between `begin` and its end, and whether a statement was sent in it
    /// (which began it on the server).
    in_txn: bool,
    txn_sent: bool,
}

/// MySQL string literal: quotes doubled and backslashes escaped (NO_BACKSLASH_ESCAPES off).
fn quote_mysql(s: &str, out: &mut String) {
    out.push('\'');
    // Most loaded text has nothing to escape: copy it whole.
    if !s.bytes().any(|b| matches!(b, b'\'' | b'\\' | 0)) {
        out.push_str(s);
        out.push('\'');
        return;
    }
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            _ => out.push(c),
        }
    }
    out.push('\'');
}

impl MySession {
    /// Before a statement, under --lazy-begin (autocommit off, so the server begins a
    /// transaction at the statement): inside `begin`'s transaction, the transaction is under way
    /// on the server; outside, a COMMIT follows the statement in the same write, so that it
    /// commits as it would with autocommit on, in the same round trip. A SET begins no
    /// transaction and takes no COMMIT, which would undo a `SET TRANSACTION` meant for the
    /// next one; a transaction begun or ended by a statement of its own (`START TRANSACTION
    /// WITH CONSISTENT SNAPSHOT`, `COMMIT AND CHAIN`) is followed as `begin` and `commit` are.
    fn autocommit(&mut self, kind: Kind) {
        if !self.lazy_begin {
            return;
        }
        match kind {
            Kind::Begin => (self.in_txn, self.txn_sent) = (true, true),
            Kind::End => (self.in_txn, self.txn_sent) = (false, false),
            _ if self.in_txn => self.txn_sent = true,
            Kind::Set => {}
            Kind::Other => self.conn.then_query("COMMIT"),
        }
    }

    /// COMMIT or ROLLBACK: under --lazy-begin, only when a statement began the transaction.
    fn end(&mut self, sql: &str) -> DbResult<()> {
        if self.lazy_begin {
            self.in_txn = false;
            if !std::mem::take(&mut self.txn_sent) {
                return Ok(());
            }
        }
        self.conn
            .query(sql, None)
            .map(drop)
            .map_err(|e| classify(&e, false))
    }

    /// The storage engines of the current database's tables (dbduel's own facts table left
    /// out), as the data holds them: a run on tables made Aria says Aria, whatever the flags.
    fn table_engines(&mut self) -> DbResult<Option<String>> {
        let rows = self.query_text(
            "SELECT DISTINCT ENGINE FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_type = 'BASE TABLE' AND table_name <> 'dbduel_facts' ORDER BY ENGINE",
        )?;
        let engines: Vec<String> = rows.iter().map(|r| r[0].to_string()).collect();
        Ok((!engines.is_empty()).then(|| engines.join(", ")))
    }
}

/// The server's own limit on each statement (0: none). MariaDB's covers every statement;
/// MySQL's only SELECTs.
fn timeout_setting(conn: &Wire, limit: Option<Duration>) -> String {
    if conn.server_version.contains("MariaDB") {
        let s = limit.map_or(0.0, |t| t.as_secs_f64());
        format!("SET SESSION max_statement_time = {s}")
    } else {
        let ms = limit.map_or(0, |t| t.as_millis().max(1));
        format!("SET SESSION max_execution_time = {ms}")
    }
}

/// Where a MariaDB/MySQL session's statement is ended from: KILL QUERY on a connection of
/// its own.
struct SideDoor {
    target: Address,
    user: String,
    password: Option<String>,
    tls: Tls,
    timeout: Duration,
    connection_id: u32,
}

/// Ends a session's statement from another thread: through its side door, then, if need be,
/// its socket shut down.
struct MyCancel {
    door: Arc<SideDoor>,
    socket: Option<SocketHandle>,
}

impl Cancel for MyCancel {
    fn cancel(&self) -> Result<(), String> {
        let door = &self.door;
        let login = Login {
            user: &door.user,
            password: door.password.as_deref(),
            database: None,
            tls: &door.tls,
        };
        let mut side =
            Wire::connect(&door.target, &login, door.timeout).map_err(|e| e.to_string())?;
        side.set_timeout(Some(door.timeout));
        side.query(&format!("KILL QUERY {}", door.connection_id), None)
            .map(drop)
            .map_err(|e| e.to_string())
    }
    fn abandon(&self) {
        if let Some(s) = &self.socket {
            s.shutdown();
        }
    }
}

impl Session for MySession {
    fn canceller(&self) -> Option<Arc<dyn Cancel>> {
        Some(Arc::new(MyCancel {
            door: self.door.clone(),
            socket: self.conn.socket_handle(),
        }))
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.conn.set_timeout(timeout);
    }

    fn set_statement_timeout(&mut self, limit: Option<Duration>) -> DbResult<()> {
        let set = timeout_setting(&self.conn, limit);
        self.conn
            .query(&set, None)
            .map(drop)
            .map_err(|e| classify(&e, false))
    }

    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        let stmt = match self.protocol {
            // -M extended is refused at `open`.
            Protocol::Prepared | Protocol::Extended => {
                MyStmt::Prepared(self.conn.prepare(sql).map_err(|e| classify(&e, false))?)
            }
            Protocol::Simple => MyStmt::Text(
                split_placeholders(sql)
                    .iter()
                    .map(|p| p.to_string())
                    .collect(),
            ),
        };
        self.stmts.push((stmt, kind(sql)));
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn execute(
        &mut self,
        id: StmtId,
        params: &[Value],
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        self.autocommit(self.stmts[id.0].1);
        match &self.stmts[id.0].0 {
            MyStmt::Prepared(stmt) => self
                .conn
                .execute(*stmt, params, keep)
                .map_err(|e| classify(&e, false)),
            MyStmt::Text(parts) => {
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                render_literals(&parts, params, &mut self.sql, quote_mysql);
                self.conn
                    .query(&self.sql, keep)
                    .map_err(|e| classify(&e, false))
            }
        }
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        if self.lazy_begin {
            self.autocommit(kind(sql));
        }
        self.conn
            .query(sql, None)
            .map(|_| ())
            .map_err(|e| classify(&e, false))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        if self.lazy_begin {
            self.autocommit(kind(sql));
        }
        let mut rows = Vec::new();
        self.conn
            .query(sql, Some(&mut rows))
            .map_err(|e| classify(&e, false))?;
        Ok(rows)
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        if self.lazy_begin {
            (self.in_txn, self.txn_sent) = (true, false);
            return Ok(());
        }
        self.batch("BEGIN")
    }
    fn commit(&mut self) -> DbResult<()> {
        self.end("COMMIT")
    }
    fn rollback(&mut self) -> DbResult<()> {
        self.end("ROLLBACK")
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64> {
        // A load runs its own transactions, with autocommit on.
        if !self.lazy_begin {
            return self.load_rows(table, columns, rows, progress, mode == Load::Replace);
        }
        self.lazy_begin = false;
        self.batch("SET autocommit = 1")?;
        let loaded = self.load_rows(table, columns, rows, progress, mode == Load::Replace);
        let restored = self.batch("SET autocommit = 0");
        self.lazy_begin = true;
        let n = loaded?;
        restored.map(|_| n)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        let version = self.query_text("SELECT VERSION()")?;
        let version = version
            .first()
            .map(|r| r[0].to_string())
            .unwrap_or_default();
        let list = SETTINGS
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        let rows = self.query_text(&format!(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({list})"
        ))?;
        let mut settings: BTreeMap<String, String> = rows
            .into_iter()
            .map(|r| (r[0].to_string(), r[1].to_string()))
            .collect();
        let table_engine = self.table_engines()?;
        if let Some(engines) = &table_engine {
            settings.insert("table_engines".into(), engines.clone());
        }
        // The session's level: MariaDB before 11.1 names it tx_isolation, MySQL 8 only
        // transaction_isolation.
        let isolation = self
            .query_text("SELECT @@SESSION.tx_isolation")
            .or_else(|_| self.query_text("SELECT @@SESSION.transaction_isolation"))?;
        Ok(ServerInfo {
            version,
            settings,
            transport: self.conn.transport.clone(),
            isolation: isolation
                .first()
                .map(|r| super::isolation_words(&r[0].to_string()))
                .unwrap_or_default(),
            table_engine,
        })
    }

    fn database_size(&mut self) -> DbResult<u64> {
        let rows = self.query_text(
            "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables \
             WHERE table_schema = DATABASE()",
        )?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0) as u64)
    }

    /// Checkpoints: InnoDB's own count (INNODB_METRICS `log_checkpoints`) only while an
    /// administrator has enabled that monitor (`innodb_monitor_enable`); otherwise None, since
    /// nothing in SHOW GLOBAL STATUS counts checkpoints. Counting sharp drops of
    /// `Innodb_checkpoint_age` was rejected: InnoDB checkpoints are fuzzy and continuous (the
    /// page cleaner advances the checkpoint about once a second under writes), and under a
    /// heavy insert load the age sat near its maximum and fell gradually, so a drop detector
    /// reports nothing exactly when flushing is hardest. Autovacuums: None (InnoDB's purge is
    /// not a vacuum and is not counted by default either). Size: this database's tables.
    fn counters(&mut self) -> DbResult<Counters> {
        let sql = if self.innodb_metrics {
            format!("SELECT {MY_SIZE}, {MY_CHECKPOINTS}")
        } else {
            format!("SELECT {MY_SIZE}")
        };
        let rows = match self.query_text(&sql) {
            // Without the PROCESS privilege INNODB_METRICS is refused: the size alone from now on.
            Err(e) if self.innodb_metrics && e.class != ErrorClass::ConnectionLost => {
                self.innodb_metrics = false;
                return self.counters();
            }
            rows => rows?,
        };
        let get = |i: usize| {
            rows.first()
                .and_then(|r| r.get(i)?.as_i64())
                .map(|v| v.max(0) as u64)
        };
        Ok(Counters {
            checkpoints: get(1),
            autovacuums: None,
            database_size_bytes: get(0),
        })
    }

    /// The server's status, InnoDB's metrics and performance_schema's waits (`stats.rs`).
    fn stats(&mut self) -> DbResult<Option<super::stats::Reading>> {
        let mariadb = self.conn.server_version.contains("MariaDB");
        let mut parts = self.stats;
        let reading = stats::read(self, mariadb, &mut parts);
        self.stats = parts;
        reading.map(Some)
    }

    /// The threads of this database, this one left out, with their InnoDB transaction's
    /// state where INNODB_TRX can be read (it takes the PROCESS privilege; without it, row
    /// lock waits look like running threads and idle transactions like idle threads). When
    /// one waits on a row lock, a second query names what the head of its queue (its holder,
    /// or the holder's holder while that one waits too) was doing.
    fn activity(&mut self) -> DbResult<Option<Vec<Activity>>> {
        let text = |v: Option<&Value>| match v {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.to_string()),
        };
        if self.activity_of.is_none() {
            let rows = self.query_text(MY_SELF)?;
            let row = rows.first();
            let id = text(row.and_then(|r| r.get(1))).unwrap_or_default();
            self.activity_of = Some((text(row.and_then(|r| r.first())), id));
        }
        // A session with no current database sees none of the run's (as `p.DB = DATABASE()`).
        let Some((Some(db), me)) = self.activity_of.clone() else {
            return Ok(Some(Vec::new()));
        };
        let threads = self.query_text(MY_THREADS)?;
        let trx = if self.trx_unseen.is_none() {
            match self.query_text(MY_TRX) {
                // Refused (no PROCESS privilege, or no access to the view), or not there (a
                // server without InnoDB): from then on a thread waiting on a row lock shows as
                // running and one idle inside a transaction as sleeping (not counted). Another
                // error stops the sampling as the processlist's would, and the result says it
                // (`Waits::stopped`).
                Err(e)
                    if UNREADABLE
                        .iter()
                        .any(|c| e.class == ErrorClass::Other((*c).into())) =>
                {
                    let fix = if e.class == ErrorClass::Other("1109".into()) {
                        ""
                    } else {
                        "; the PROCESS privilege shows them"
                    };
                    self.trx_unseen = Some(format!(
                        "row lock waits and idle transactions not seen (information_schema.INNODB_TRX not read: {}): they count as running and as idle{fix}",
                        e.message
                    ));
                    Vec::new()
                }
                rows => rows?,
            }
        } else {
            Vec::new()
        };
        // Each transaction's row by its thread, read once (not once per thread).
        let trx: std::collections::HashMap<String, &Vec<Value>> = trx
            .iter()
            .filter_map(|t| Some((text(t.first())?, t)))
            .collect();
        let mut seen: Vec<(Activity, Option<String>)> = threads
            .iter()
            .filter_map(|r| {
                let id = text(r.first())?;
                if id == me || text(r.get(3)).as_deref() != Some(db.as_str()) {
                    return None;
                }
                let command = text(r.get(4))?;
                let t = trx.get(&id);
                if command == "Sleep" && t.is_none() {
                    return None;
                }
                let state = text(r.get(6)).unwrap_or_default();
                let trx_state = t.and_then(|t| text(t.get(1)));
                let a = activity::mysql(&command, &state, trx_state.as_deref())?;
                Some((a, t.and_then(|t| text(t.get(2)))))
            })
            .collect();
        let waiting = |a: &Activity| a.event == activity::ROW_LOCK_WAIT;
        if self.holders_refused.is_none() && seen.iter().any(|(a, _)| waiting(a)) {
            match self.query_text(MY_HOLDERS) {
                Ok(rows) => {
                    // Each waiting transaction's first holder, then that one's while it waits.
                    let holder = |trx: &String| {
                        rows.iter()
                            .find(|r| text(r.first()).as_ref() == Some(trx))
                            .and_then(|r| text(r.get(1)))
                    };
                    for (a, trx) in seen.iter_mut().filter(|(a, _)| waiting(a)) {
                        let Some(first) = trx.as_ref().and_then(holder) else {
                            continue;
                        };
                        let head = activity::head_of_queue(first, holder);
                        // The head's transaction state, from a row that names it, and its
                        // thread's, from the processlist (a thread gone since: sleeping).
                        let row = rows.iter().find(|r| text(r.get(1)).as_ref() == Some(&head));
                        a.holder = row.and_then(|r| {
                            let thread = text(r.get(2));
                            let t = threads
                                .iter()
                                .find(|t| thread.is_some() && text(t.first()) == thread);
                            let command = t
                                .and_then(|t| text(t.get(4)))
                                .unwrap_or_else(|| "Sleep".into());
                            let state = t.and_then(|t| text(t.get(6))).unwrap_or_default();
                            let held =
                                activity::mysql(&command, &state, text(r.get(3)).as_deref())?;
                            Some(activity::Holder {
                                class: held.class,
                                event: held.event,
                            })
                        });
                    }
                }
                Err(e) if e.class == ErrorClass::ConnectionLost => return Err(e),
                Err(e) => self.holders_refused = Some(e.message),
            }
        }
        if let Some(why) = &self.holders_refused {
            // Said where the holders would be: the summary's line and the lock verdict.
            for (a, _) in seen.iter_mut().filter(|(a, _)| waiting(a)) {
                a.holder = Some(activity::Holder {
                    class: activity::WaitClass::Other,
                    event: format!("(not named: INNODB_LOCK_WAITS refused: {why})"),
                });
            }
        }
        Ok(Some(seen.into_iter().map(|(a, _)| a).collect()))
    }
    fn activity_unseen(&self) -> Option<String> {
        self.trx_unseen.clone()
    }
    fn statements(&mut self) -> DbResult<super::statements::Reading> {
        statements::read(self)
    }
}

/// The sampler's session's current database and its own thread's id, read at its first sample
/// (the id the server gives it, which a proxy's handshake may not).
const MY_SELF: &str = "SELECT DATABASE(), CONNECTION_ID()";
/// Every thread the sampler's user may see (`activity` keeps the database's others): Id, User,
/// Host, db, Command, Time, State, Info on MariaDB and MySQL alike (MariaDB adds Progress
/// after them). A quarter of the time of
/// the same rows from information_schema.PROCESSLIST filtered on the server (0.07 against
/// 0.29 ms a query on MariaDB 10.11: the view is built as a table first), which at ten
/// samples a second is what a run of few clients pays (BENCHMARKS.md).
const MY_THREADS: &str = "SHOW PROCESSLIST";
/// The errors of a view the sampler may not read: a privilege it takes (PROCESS), its table's,
/// its database's refused, or the table unknown (1109: no InnoDB).
const UNREADABLE: [&str; 4] = ["1227", "1142", "1044", "1109"];
/// Each InnoDB transaction's thread, state and id (`activity`: a sleeping thread inside one is
/// idle in a transaction; a waiting one's id is asked for its lock's holder).
const MY_TRX: &str =
    "SELECT trx_mysql_thread_id, trx_state, trx_id FROM information_schema.INNODB_TRX";

/// Who holds each awaited row lock (asked only when a sample saw a row lock wait): the waiting
/// transaction, its holder's, and the holder's thread and transaction state (the thread's
/// command and state from the sample's processlist).
const MY_HOLDERS: &str = "SELECT w.requesting_trx_id, w.blocking_trx_id, \
     ht.trx_mysql_thread_id, ht.trx_state \
     FROM information_schema.INNODB_LOCK_WAITS w JOIN information_schema.INNODB_TRX ht \
     ON ht.trx_id = w.blocking_trx_id";

/// The current database's size (NULL when the session has no current database).
const MY_SIZE: &str = "IF(DATABASE() IS NULL, NULL, (SELECT COALESCE(SUM(data_length + \
     index_length), 0) FROM information_schema.tables WHERE table_schema = DATABASE()))";

/// InnoDB's checkpoint count, NULL unless the monitor is enabled (the same columns on MySQL).
const MY_CHECKPOINTS: &str = "(SELECT `COUNT` FROM information_schema.INNODB_METRICS \
     WHERE NAME = 'log_checkpoints' AND TIME_ENABLED IS NOT NULL AND TIME_DISABLED IS NULL)";

/// The error's class by MariaDB/MySQL error number; I/O errors mean the server is gone
/// (or, while connecting, unreachable).
fn classify(e: &WireError, connecting: bool) -> DbError {
    match e {
        WireError::Server { code, message } => {
            let class = match code {
                1213 => ErrorClass::Deadlock,
                1205 => ErrorClass::LockTimeout,
                1020 => ErrorClass::Serialization,
                1045 | 1698 => ErrorClass::AuthFailed,
                1146 => ErrorClass::UndefinedTable,
                1969 | 3024 => ErrorClass::StatementTimeout,
                1062 => ErrorClass::UniqueViolation,
                1927 | 2006 | 2013 => ErrorClass::ConnectionLost,
                code => ErrorClass::Other(code.to_string()),
            };
            let hint = if *code == 1040 {
                "; lower --clients or raise the server's max_connections"
            } else {
                ""
            };
            DbError::new(class, format!("{message} (error {code}){hint}"))
        }
        WireError::Io(e) => DbError::new(ErrorClass::link(connecting), e.to_string()),
        WireError::Tls(m) => DbError::new(ErrorClass::link(connecting), m.clone()),
        WireError::Protocol(m) => DbError::new(
            ErrorClass::Other("protocol".into()),
            format!("MariaDB/MySQL protocol error: {m}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_quoted() {
        let quoted = |s: &str| {
            let mut out = String::new();
            quote_mysql(s, &mut out);
            out
        };
        assert_eq!(quoted("plain text"), "'plain text'");
        assert_eq!(quoted("it's a \\ and \0"), "'it''s a \\\\ and \\0'");
        assert_eq!(quoted(""), "''");
    }

    /// Under --lazy-begin, a SET outside a transaction takes no COMMIT after it (a COMMIT would
    /// reset a `SET TRANSACTION` meant for the next transaction), a statement that begins or
    /// ends a transaction is followed as `begin` and `commit` are, and everything else outside
    /// a transaction takes a COMMIT.
    #[test]
    fn statements_are_told_apart() {
        for (sql, want) in [
            ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", Kind::Set),
            ("  set session max_statement_time = 1", Kind::Set),
            ("SET\tautocommit = 1", Kind::Set),
            ("START TRANSACTION WITH CONSISTENT SNAPSHOT", Kind::Begin),
            ("begin work", Kind::Begin),
            ("COMMIT AND CHAIN", Kind::End),
            ("rollback", Kind::End),
            ("ROLLBACK TO SAVEPOINT a", Kind::Other),
            ("SELECT 1", Kind::Other),
            ("SETTINGS", Kind::Other),
            ("UPDATE t SET a = 1", Kind::Other),
            ("", Kind::Other),
            ("SET", Kind::Other),
            ("START SLAVE", Kind::Other),
        ] {
            assert_eq!(kind(sql), want, "{sql}");
        }
    }

    #[test]
    fn error_numbers_are_classified() {
        let deadlock = WireError::Server {
            code: 1213,
            message: "Deadlock found".into(),
        };
        assert_eq!(classify(&deadlock, false).class, ErrorClass::Deadlock);
        let lost = WireError::Io(std::io::ErrorKind::UnexpectedEof.into());
        assert_eq!(classify(&lost, false).class, ErrorClass::ConnectionLost);
        assert_eq!(classify(&lost, true).class, ErrorClass::Unreachable);
    }
}
