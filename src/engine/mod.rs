//! The engine seam: the `Engine` and `Session` traits every database implements, the values and
//! errors that cross the seam, and the registry that maps a DSN scheme to an engine.
//!
//! `Engine`: connect, dialect, table options, embedded or not, the wait sampler's rate
//! (`activity_hz`). `Session`: prepare, `execute` (with
//! `exec` and `query` over it), `batch`, begin/commit/rollback, `command` (a hint for the
//! statement clock, which engines ignore), pipeline mode (`start_pipeline`, `sync_pipeline`,
//! `end_pipeline`: PostgreSQL's; the others run a pipeline's statements as they come), `bulk_load` in a `Load` mode
//! (replace, or append so that several sessions load one table at once), server info with its
//! `Transport`, database size, `counters` for the observer, `activity` for the wait sampler,
//! `connection_figures` (an embedded engine's own counts), `canceller` and `set_timeout` for the
//! end of a run, `set_statement_timeout`. `Cancel`: the engine's own cancel, then the socket shut
//! (`abandon`). `DbError` with its `ErrorClass`, `Value`, placeholder splitting and literal
//! rendering. `ENGINES`: each engine's `EngineEntry` (name, DSN schemes, help, `open`, `file`:
//! whether the DSN names a file rather than a server, `durability`: what the settings its
//! `server_info` reads back promise for commits), found by `entry_for` a scheme, `named`, and
//! `parse_dsn`.
//!
//! One engine per file, or per folder when dbduel speaks its wire protocol itself: then `mod.rs` is
//! the engine (sessions, loading, settings, and the classification of the server's error codes)
//! over `wire.rs`, the protocol connection (messages, authentication, TLS), whose errors carry the
//! server's code unclassified. Shared by the engines: `tls.rs`, `login.rs` (a login the DSN leaves
//! out), `stall.rs` (the guard on long operations), `watchdog.rs` (a client-kept statement timeout),
//! `durability.rs` (what settings promise for commits), `activity.rs` (sessions' states as wait
//! classes), `figures.rs` (an embedded engine's connections' own counts of their time),
//! `statements.rs` (the server's figures per statement), `stats.rs` (the server's counters as
//! named numbers, `Session::stats`).
//!
//! A new engine is its file and one line in `ENGINES`; shared code names no engine, except SQLite
//! as the default where none is asked for (`run` without `--dsn`, a plan without `engines`). Its
//! `open` refuses the DSN parameters and `EngineOptions` that do not apply, naming them. What
//! differs between engines lives in its file: its errors classified into `ErrorClass` (retryable
//! ones, lost connections, authentication, undefined table), its transaction statements, and a
//! `bulk_load` that takes its fastest path in both `Load` modes; its DDL differs in its dialect's
//! SQL files (sql.rs). `server_info` reports the isolation in lower-case words and, where there are
//! several, the storage engine. A server engine also reports its `Transport`, takes
//! `login::connect_timeout`, gives a `Cancel` from `Session::canceller`, implements
//! `Session::counters` for the observer and `Session::statements` (the server's figures per
//! statement, or why it has none), and applies `EngineOptions::statement_timeout` through
//! `Session::set_statement_timeout` (the server's own limit, or `watchdog::Watchdog` over a
//! `Cancel` where the server has none). DSNs (`parse_dsn`), `list`, plans (knobs and DSNs per
//! engine name) and `duel` (engines with a file always, servers when installed) then take it from
//! the registry.

pub mod activity;
pub mod durability;
pub mod figures;
mod firebird;
mod login;
mod mysql;
mod postgres;
mod sqlite;
pub mod stall;
pub mod statements;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod tls;
#[cfg(test)]
mod toy;
mod watchdog;

use std::fmt;
use std::sync::Arc;

use crate::dsn::Dsn;

/// A parameter or a result value. Deliberately small: benchmarks move integers and text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
}

impl Value {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            Value::Float(v) => Some(*v as i64),
            Value::Text(s) => s.trim().parse().ok(),
            Value::Null => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// How an error affects the client that met it. Each engine maps its own codes to these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Retryable: the transaction is rolled back and may be tried again.
    Serialization,
    Deadlock,
    LockTimeout,
    Busy,
    /// The server's statement timeout (`--statement-timeout`) cancelled the statement.
    StatementTimeout,
    /// Retryable: an UPDATE of a row that must exist matched none, so committing would apply
    /// the transaction in part. Firebird 3.0.11 has been seen to do this to an UPDATE that waited on
    /// a hot row (docs/connecting.md, Firebird's lock wait); the built-in workloads check for it.
    MissedRow,
    /// Fatal for the session: the client reconnects and the loss is counted.
    ConnectionLost,
    /// Connecting failed because the credentials were refused.
    AuthFailed,
    /// Connecting failed because the server could not be reached.
    Unreachable,
    /// A table the statement needs does not exist (typically: run before prepare).
    UndefinedTable,
    /// A duplicate key: retryable only where the workload says so (sysbench's delete+insert).
    UniqueViolation,
    /// The user asked dbduel to stop (Ctrl-C) while the operation ran.
    Interrupted,
    /// Anything else, counted by the engine's own code (SQLSTATE, error number...).
    Other(String),
}

impl ErrorClass {
    /// A broken link to the server: it could not be reached while connecting, or the
    /// connection was lost afterwards.
    pub fn link(connecting: bool) -> ErrorClass {
        if connecting {
            ErrorClass::Unreachable
        } else {
            ErrorClass::ConnectionLost
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ErrorClass::Serialization
                | ErrorClass::Deadlock
                | ErrorClass::LockTimeout
                | ErrorClass::Busy
                | ErrorClass::MissedRow
        )
    }

    /// The short name under which errors of this class are counted in results.
    pub fn kind(&self) -> String {
        match self {
            ErrorClass::Serialization => "serialization".into(),
            ErrorClass::Deadlock => "deadlock".into(),
            ErrorClass::LockTimeout => "lock_timeout".into(),
            ErrorClass::Busy => "busy".into(),
            ErrorClass::MissedRow => "missed_row".into(),
            ErrorClass::StatementTimeout => "statement_timeout".into(),
            ErrorClass::ConnectionLost => "connection_lost".into(),
            ErrorClass::AuthFailed => "auth_failed".into(),
            ErrorClass::Unreachable => "unreachable".into(),
            ErrorClass::UndefinedTable => "undefined_table".into(),
            ErrorClass::Interrupted => "interrupted".into(),
            ErrorClass::UniqueViolation => "unique_violation".into(),
            ErrorClass::Other(code) => format!("other_{code}"),
        }
    }
}

/// An error from the database or its driver, classified by the engine that raised it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    pub class: ErrorClass,
    pub message: String,
}

impl DbError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        DbError {
            class,
            message: message.into(),
        }
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// How statements travel: as text with literals, prepared once and executed with parameters,
/// or (PostgreSQL's extended query protocol, pgbench's `-M extended`) parsed each time with the
/// parameters sent apart.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Simple,
    Extended,
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// Options a user may give to an engine; each engine rejects what does not apply to it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EngineOptions {
    /// MariaDB/MySQL storage engine for created tables (InnoDB, MyISAM, Aria).
    pub table_engine: Option<String>,
    /// The server's own limit on each statement (`--statement-timeout`).
    pub statement_timeout: Option<std::time::Duration>,
    /// `--lazy-begin`: a session's `begin` sends nothing; the transaction begins with its
    /// first statement, in one round trip with it (PostgreSQL: BEGIN before the statement's
    /// Bind, under one Sync; MariaDB/MySQL: the session runs with autocommit off, a COMMIT
    /// following each statement outside a transaction in the same write), as the JDBC
    /// drivers do, and a transaction that sent no statement sends no COMMIT. Engines without
    /// the round trip to save refuse it (`no_lazy_begin`).
    pub lazy_begin: bool,
}

impl EngineOptions {
    /// Refuse `--table-engine` where the engine has no storage engines to choose from.
    pub fn no_table_engine(&self) -> Result<(), crate::error::Error> {
        match self.table_engine {
            Some(_) => Err(crate::error::Error::Usage(
                "--table-engine applies to mysql:// only".into(),
            )),
            None => Ok(()),
        }
    }

    /// Refuse `--lazy-begin` where BEGIN cannot travel with a statement (`why`).
    pub fn no_lazy_begin(&self, why: &str) -> Result<(), crate::error::Error> {
        if self.lazy_begin {
            return Err(crate::error::Error::Usage(format!(
                "--lazy-begin applies to postgresql:// and mysql:// only: {why}; leave it out"
            )));
        }
        Ok(())
    }
}

/// A prepared statement's handle inside one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StmtId(pub usize);

/// What a server says about itself: version, the settings that decide performance.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ServerInfo {
    pub version: String,
    pub settings: std::collections::BTreeMap<String, String>,
    /// How this session reached the server: socket kind, TLS version and cipher.
    pub transport: tls::Transport,
    /// The isolation level this session's transactions run at, in lower-case words ("read
    /// committed", "repeatable read", "snapshot", "serializable"): the session's own level,
    /// which may differ from the server's default among the settings.
    pub isolation: String,
    /// The storage engines of the database's tables as the server reports them (MariaDB/MySQL:
    /// "InnoDB", or "Aria, InnoDB" when they are mixed); None where the engine has one.
    pub table_engine: Option<String>,
}

/// An isolation level as the server names it (REPEATABLE-READ, READ COMMITTED), in the
/// lower-case words results use.
pub fn isolation_words(level: &str) -> String {
    level.trim().to_lowercase().replace(['-', '_'], " ")
}

/// Cumulative server counters read by the observer each second (None where the engine cannot
/// tell). Checkpoints and autovacuums count since the server (or its statistics) started.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    pub checkpoints: Option<u64>,
    pub autovacuums: Option<u64>,
    pub database_size_bytes: Option<u64>,
}

/// How the runner ends a client stuck inside a statement at the end of a run.
pub trait Cancel: Send + Sync {
    /// Ask the server to cancel the running statement through the engine's own way
    /// (PostgreSQL's CancelRequest, MariaDB's KILL QUERY); bounded by a short timeout.
    fn cancel(&self) -> Result<(), String>;
    /// Give the connection up: shut its socket down, so that a read blocked on it returns.
    fn abandon(&self);
}

/// A second handle on a session's socket, for `Cancel::abandon`.
pub enum SocketHandle {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl SocketHandle {
    pub fn shutdown(&self) {
        let _ = match self {
            SocketHandle::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            SocketHandle::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

/// Rows generated by the client for a bulk load, one at a time into a reused buffer.
pub trait RowSource {
    /// Fill `row` with the next row's values; false when there are no more rows.
    fn next_row(&mut self, row: &mut Vec<Value>) -> bool;
    /// How many rows there will be in all (for progress).
    fn total(&self) -> u64;
}

/// What a bulk load does with the rows its table already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Replace them (the engine may take its fastest path: a truncate, COPY FREEZE).
    Replace,
    /// Keep them: several sessions may append to one table at once (TPC-C loads warehouses
    /// in parallel).
    Append,
}

/// Called with the number of rows loaded since the last call; returns false to abort.
pub type LoadProgress<'a> = &'a mut dyn FnMut(u64) -> bool;

/// One connection to a database. Statements use `?` placeholders; the session translates them.
pub trait Session: Send {
    /// Prepare `sql` for repeated execution under the session's protocol.
    fn prepare(&mut self, sql: &str) -> DbResult<StmtId>;
    /// Execute a prepared statement; returns rows affected or returned. Its rows are kept in
    /// `rows` when given, and only counted otherwise.
    fn execute(
        &mut self,
        stmt: StmtId,
        params: &[Value],
        rows: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64>;
    /// Execute a prepared statement; returns rows affected or returned (values are discarded).
    fn exec(&mut self, stmt: StmtId, params: &[Value]) -> DbResult<u64> {
        self.execute(stmt, params, None)
    }
    /// Execute a prepared statement and return its rows.
    fn query(&mut self, stmt: StmtId, params: &[Value]) -> DbResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        self.execute(stmt, params, Some(&mut rows))?;
        Ok(rows)
    }
    /// Run one or more statements of text (DDL, administration), results discarded.
    fn batch(&mut self, sql: &str) -> DbResult<()>;
    /// Run one statement of text and return its rows.
    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>>;
    /// Start a transaction; `write` says it will write (SQLite takes the write lock at once).
    fn begin(&mut self, write: bool) -> DbResult<()>;
    fn commit(&mut self) -> DbResult<()>;
    fn rollback(&mut self) -> DbResult<()>;
    /// A workload's own command `index` of the running transaction, as written (`text`),
    /// starts now: the statement clock (`runner::statements`) then times the transaction by
    /// these commands, as pgbench's -r does a script's. Engines ignore it.
    fn command(&mut self, _index: usize, _text: &str) {}
    /// Pipeline mode (pgbench's `\startpipeline`), with the prepared protocol: true when the
    /// engine then sends what follows without waiting for each reply, `execute` (whose rows are
    /// not kept), `begin`, `commit` and `rollback` queueing their statements and returning
    /// nothing, until `end_pipeline`; false when it has no such mode and runs them as they come.
    fn start_pipeline(&mut self) -> DbResult<bool> {
        Ok(false)
    }
    /// pgbench's `\syncpipeline`: the statements queued so far end an implicit transaction
    /// segment (a failure skips the rest of its segment only); nothing is waited for.
    fn sync_pipeline(&mut self) -> DbResult<()> {
        Ok(())
    }
    /// pgbench's `\endpipeline`: send what is queued and wait for every reply; the first
    /// failure is the error. The session is out of pipeline mode afterwards, failed or not.
    fn end_pipeline(&mut self) -> DbResult<()> {
        Ok(())
    }
    /// Load `rows` into `table` through the engine's fastest bulk path (COPY, LOAD DATA, a
    /// prepared INSERT in one transaction...), replacing what it holds or appending to it as
    /// `mode` says; `progress` is told every 10,000 rows and stops the load when it says so.
    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64>;
    /// Version and performance-relevant settings, read from the server itself.
    fn server_info(&mut self) -> DbResult<ServerInfo>;
    /// Size on disk of the database (or of the given tables where the engine can tell).
    fn database_size(&mut self) -> DbResult<u64>;
    /// A handle another thread may use to stop this session's statement or give the
    /// connection up (None where the engine has no way).
    fn canceller(&self) -> Option<Arc<dyn Cancel>> {
        None
    }
    /// The server's notices and warnings to this session's statements since the last call, as
    /// its own client prints them (PostgreSQL's `WARNING:  ...`); none where the engine sends
    /// none.
    fn take_notices(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Bound every later read and write on the connection (None: no bound).
    fn set_timeout(&mut self, _timeout: Option<std::time::Duration>) {}
    /// Limit each later statement to `limit` (None: no limit): the server's own timeout where
    /// it has one, a cancel from the client otherwise. A statement past it fails with
    /// `StatementTimeout`.
    fn set_statement_timeout(&mut self, _limit: Option<std::time::Duration>) -> DbResult<()> {
        Err(DbError::new(
            ErrorClass::Other("statement_timeout".into()),
            "this engine cannot limit a statement's time",
        ))
    }
    /// Cumulative server counters for the observer (None where the engine cannot tell).
    fn counters(&mut self) -> DbResult<Counters> {
        Ok(Counters::default())
    }
    /// What the other sessions of this database that dbduel opened are doing now, each one
    /// not idle between transactions (`activity::Activity`); None where the engine cannot
    /// tell (an embedded engine, or one whose monitoring is not read yet).
    fn activity(&mut self) -> DbResult<Option<Vec<activity::Activity>>> {
        Ok(None)
    }
    /// What `activity` could not see of the sessions, and why (a view the server refused
    /// it), once it knows: the verdict says it beside its claim.
    fn activity_unseen(&self) -> Option<String> {
        None
    }
    /// This connection's own cumulative figures (`figures::ConnectionFigures`): an embedded
    /// engine's evidence of where its clients' time went; None where the engine has none.
    fn connection_figures(&mut self) -> Option<figures::ConnectionFigures> {
        None
    }
    /// The server's cumulative figures per statement of this database and user
    /// (`statements::Reading`), dbduel's own observation statements left out; where there are
    /// none, why and how to turn them on.
    fn statements(&mut self) -> DbResult<statements::Reading> {
        Ok(statements::Reading::Unavailable(
            "this engine keeps no cumulative figures per statement".into(),
        ))
    }
    /// The server's counters for this database now, in as few round trips as the engine
    /// allows (`stats::Reading`); None where the engine keeps none (an embedded engine).
    fn stats(&mut self) -> DbResult<Option<stats::Reading>> {
        Ok(None)
    }
}

/// A database reachable through one DSN: opens sessions and knows its dialect.
pub trait Engine: Send + Sync {
    /// The registry name (`postgres`, `mysql`, `sqlite`).
    fn name(&self) -> &'static str;
    /// The dialect whose SQL files override the generic SQL (see `sql/`).
    fn dialect(&self) -> &'static str;
    /// True when the database runs inside dbduel's own process.
    fn embedded(&self) -> bool;
    /// True when every wait of its sessions goes through `coop::Coop` sockets, so that many
    /// clients may share a thread (`runner::threads`); false keeps a thread per client.
    fn multiplexed(&self) -> bool {
        false
    }
    /// True when its clients share threads past 8 clients a core without `-j` (where they
    /// can: `multiplexed`); false keeps a thread per client unless `-j` asks.
    fn shares_threads_unasked(&self) -> bool {
        self.multiplexed()
    }
    /// Open a new session.
    fn connect(&self) -> DbResult<Box<dyn Session>>;
    /// Text appended to CREATE TABLE (storage engine, fillfactor...).
    fn table_options(&self, fillfactor: Option<u32>) -> String;
    /// The rate at which the wait sampler may read `Session::activity` (samples a second),
    /// where the engine's monitoring is too heavy for the default; None: the default.
    fn activity_hz(&self) -> Option<u32> {
        None
    }
    /// The most sessions a second the wait sampler may read from this engine, where each
    /// session read costs it more than the default allows for; None: the default.
    fn activity_sessions_per_second(&self) -> Option<u32> {
        None
    }
    /// Whether a short timed run may be sampled faster than the sessions' budget above allows,
    /// up to `activity_hz`, so that it gets enough samples for a verdict
    /// (`metrics::waits::rate`); false where each sample's cost makes that budget firm.
    fn activity_rate_floor(&self) -> bool {
        true
    }
}

/// How a registry entry opens its engine from a DSN.
pub type OpenEngine =
    fn(&Dsn, &EngineOptions, Protocol) -> Result<Box<dyn Engine>, crate::error::Error>;

/// One entry of the engine registry.
pub struct EngineEntry {
    pub name: &'static str,
    pub schemes: &'static [&'static str],
    pub about: &'static str,
    pub open: OpenEngine,
    /// The DSN names a file (`scheme:///path?key=value`), not a server: the engine is
    /// embedded, and a sweep or a duel runs it on a file of its own, its knobs as DSN
    /// parameters.
    pub file: bool,
    /// What the settings read back from the server (`ServerInfo::settings`) promise for
    /// committed transactions.
    pub durability: fn(&std::collections::BTreeMap<String, String>) -> durability::Durability,
}

/// Every engine dbduel knows. Adding an engine adds one file and one line here.
pub const ENGINES: &[EngineEntry] = &[
    sqlite::ENTRY,
    postgres::ENTRY,
    mysql::ENTRY,
    firebird::ENTRY,
    #[cfg(test)]
    toy::ENTRY,
];

/// The entry whose DSN scheme this is.
pub fn entry_for(scheme: &str) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.schemes.contains(&scheme))
}

/// The entry of the engine registered under this name.
pub fn named(name: &str) -> Option<&'static EngineEntry> {
    ENGINES.iter().find(|e| e.name == name)
}

/// Parse a DSN: libpq's keyword/value form (PostgreSQL), a file path after the scheme where the
/// scheme's engine takes a file, a URL
/// otherwise (an unknown scheme is refused when the engine is opened).
pub fn parse_dsn(text: &str) -> Result<Dsn, crate::error::Error> {
    if Dsn::is_conninfo(text) {
        return Dsn::conninfo(text);
    }
    match entry_for(&Dsn::scheme_of(text)?) {
        Some(entry) if entry.file => Dsn::parse_file(text),
        _ => Dsn::parse(text),
    }
}

/// Open the engine named by the DSN's scheme.
pub fn open(
    dsn: &Dsn,
    opts: &EngineOptions,
    protocol: Protocol,
) -> Result<Box<dyn Engine>, crate::error::Error> {
    let entry = entry_for(&dsn.scheme).ok_or_else(|| {
        let known: Vec<_> = ENGINES
            .iter()
            .flat_map(|e| e.schemes.iter().copied())
            .collect();
        crate::error::Error::Usage(format!(
            "unknown engine '{}' in --dsn {}: use one of the schemes {}",
            dsn.scheme,
            dsn,
            known.join(", ")
        ))
    })?;
    (entry.open)(dsn, opts, protocol)
}

/// `-M extended` is PostgreSQL's extended query protocol; an engine without one refuses it at
/// `open`, naming the modes it has.
pub fn no_extended(protocol: Protocol, product: &str) -> Result<(), crate::error::Error> {
    if protocol != Protocol::Extended {
        return Ok(());
    }
    Err(crate::error::Error::Usage(format!(
        "-M extended is PostgreSQL's extended query protocol (each statement parsed again, its parameters sent apart, as pgbench -M extended); {product} has none: use -M prepared (parsed once, executed with parameters) or -M simple (statements as text)"
    )))
}

/// Put a failed connection's error in words that name the server and what to check.
pub fn connect_error(mut err: DbError, product: &str, address: &str, user: &str) -> DbError {
    err.message = match err.class {
        ErrorClass::Unreachable => format!("cannot reach {product} at {address}: {}", err.message),
        ErrorClass::AuthFailed => format!("{product} refused user '{user}': {}", err.message),
        _ => format!("cannot connect to {product} at {address}: {}", err.message),
    };
    err
}

/// Split SQL with `?` placeholders into the text between them (quotes respected).
pub fn split_placeholders(sql: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in sql.char_indices() {
        match (c, quote) {
            ('\'' | '"' | '`', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('?', None) => {
                parts.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&sql[start..]);
    parts
}

/// Render SQL with `?` placeholders as text with literals, for the simple protocol.
pub fn render_literals(
    parts: &[&str],
    params: &[Value],
    out: &mut String,
    quote: fn(&str, &mut String),
) {
    out.clear();
    for (i, part) in parts.iter().enumerate() {
        out.push_str(part);
        if let Some(v) = params.get(i).filter(|_| i + 1 < parts.len()) {
            push_literal(v, out, quote);
        }
    }
}

/// A row's values as literals separated by commas (`1,'it''s',NULL`), for the loaders that
/// send rows as INSERT text.
pub fn push_row_literals(row: &[Value], out: &mut String, quote: fn(&str, &mut String)) {
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_literal(v, out, quote);
    }
}

fn push_literal(v: &Value, out: &mut String, quote: fn(&str, &mut String)) {
    use std::fmt::Write;
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Value::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        Value::Text(s) => quote(s, out),
    }
}

/// What a bulk load returns when its progress says stop: the load's transaction rolled back,
/// the error that says it was interrupted.
pub fn load_interrupted(session: &mut dyn Session) -> DbError {
    let _ = session.rollback();
    DbError::new(ErrorClass::Interrupted, "loading interrupted")
}

/// Standard SQL string quoting: 'it''s'.
pub fn quote_standard(s: &str, out: &mut String) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}
