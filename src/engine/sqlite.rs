//! SQLite through the bundled library (rusqlite): WAL, a busy timeout, write transactions that take
//! the write lock at BEGIN (`BEGIN IMMEDIATE`) so that many writers stay correct, prepared-insert
//! loading, a statement timeout through SQLite's progress handler, and `sqlite3_interrupt` as its
//! cancel at the end of a run. Each connection counts where its time went (`evidence.rs`: cache,
//! lock waits, checkpoints, COMMIT), the evidence of an engine with no server to sample.

mod evidence;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use evidence::Evidence;

use super::durability::{self, Durability, Level};
use super::{
    Cancel, Counters, DbError, DbResult, Engine, EngineEntry, EngineOptions, ErrorClass, Load,
    LoadProgress, Protocol, RowSource, ServerInfo, Session, StmtId, Value, load_interrupted,
    quote_standard, render_literals, split_placeholders,
};
use crate::dsn::Dsn;
use crate::error::Error;
use std::collections::BTreeMap;

pub const ENTRY: EngineEntry = EngineEntry {
    name: "sqlite",
    schemes: &["sqlite"],
    about: "SQLite, embedded (bundled library), WAL; DSN parameters: journal_mode, synchronous, busy_timeout (ms), cache_size",
    open,
    file: true,
    durability,
};

/// SQLite's own documentation: synchronous=OFF, or a journal in memory or none, may corrupt
/// on a crash; NORMAL in WAL mode may roll the last commits back after a power loss, and in
/// rollback-journal mode may corrupt on some file systems; FULL and EXTRA are durable.
fn durability(settings: &BTreeMap<String, String>) -> Durability {
    let (Some(journal), Some(sync)) = (settings.get("journal_mode"), settings.get("synchronous"))
    else {
        return Durability::of(vec![durability::unread("journal_mode and synchronous")]);
    };
    let journal = journal.to_ascii_lowercase();
    let mut found = Vec::new();
    if matches!(journal.as_str(), "off" | "memory") {
        found.push((
            Level::Unsafe,
            format!("journal_mode={journal}: a crash in a transaction may corrupt the database"),
        ));
    }
    match (sync.as_str(), journal.as_str()) {
        ("0", _) => found.push((
            Level::Unsafe,
            "synchronous=OFF: a power loss may corrupt the database".into(),
        )),
        ("1", "wal") => found.push((
            Level::NotDurable,
            "synchronous=NORMAL in WAL mode: a power loss may roll the last commits back".into(),
        )),
        ("1", _) => found.push((
            Level::Unsafe,
            format!("synchronous=NORMAL with journal_mode={journal}: a power loss may corrupt the database"),
        )),
        _ => {}
    }
    Durability::of(found)
}

/// PRAGMAs that a DSN may set, with dbduel's defaults (None: as the library ships).
const PRAGMAS: &[(&str, Option<&str>)] = &[
    ("journal_mode", Some("WAL")),
    ("synchronous", None),
    ("cache_size", None),
    ("busy_timeout", Some("10000")),
];

/// A DSN parameter's value, checked before it becomes a PRAGMA (which would take nonsense
/// silently, or run what follows a semicolon).
fn check_pragma(name: &str, value: &str) -> Result<(), String> {
    let upper = value.to_ascii_uppercase();
    let ok = match name {
        "journal_mode" => {
            ["DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF"].contains(&upper.as_str())
        }
        "synchronous" => {
            ["OFF", "NORMAL", "FULL", "EXTRA", "0", "1", "2", "3"].contains(&upper.as_str())
        }
        "cache_size" => value.parse::<i64>().is_ok(),
        "busy_timeout" => value.parse::<u32>().is_ok(),
        _ => true,
    };
    if ok {
        return Ok(());
    }
    let expected = match name {
        "journal_mode" => "DELETE, TRUNCATE, PERSIST, MEMORY, WAL or OFF",
        "synchronous" => "OFF, NORMAL, FULL or EXTRA",
        "cache_size" => "an integer (pages, or -KiB)",
        _ => "milliseconds, a whole number",
    };
    Err(format!("{name}={value}: use {expected}"))
}

/// Settings reported with every result.
const SETTINGS: &[&str] = &[
    "journal_mode",
    "synchronous",
    "cache_size",
    "page_size",
    "busy_timeout",
    "mmap_size",
    "locking_mode",
    "wal_autocheckpoint",
    "temp_store",
];

/// Rows per transaction when loading.
const COMMIT_ROWS: u64 = 200_000;

struct Sqlite {
    path: PathBuf,
    pragmas: Vec<(String, String)>,
    protocol: Protocol,
    statement_timeout: Option<Duration>,
}

/// SQLite calls the progress handler every this many virtual machine instructions (a few
/// microseconds of work): how late a statement past its timeout may stop.
const PROGRESS_OPS: i32 = 1000;

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    super::no_extended(protocol, "SQLite")?;
    opts.no_table_engine()?;
    opts.no_lazy_begin("SQLite runs in dbduel's process, with no round trip to save")?;
    if dsn.database.is_empty() {
        return Err(Error::Usage(format!(
            "--dsn {dsn} names no file: use sqlite:///path/to/file.db"
        )));
    }
    let mut pragmas = Vec::new();
    for (name, default) in PRAGMAS {
        if let Some(v) = dsn.param(name).or(*default) {
            check_pragma(name, v).map_err(|e| Error::Usage(format!("--dsn {dsn}: {e}")))?;
            pragmas.push((name.to_string(), v.to_string()));
        }
    }
    dsn.only_params("sqlite", PRAGMAS.iter().map(|p| p.0))?;
    Ok(Box::new(Sqlite {
        path: PathBuf::from(&dsn.database),
        pragmas,
        protocol,
        statement_timeout: opts.statement_timeout,
    }))
}

impl Engine for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    fn dialect(&self) -> &'static str {
        "sqlite"
    }
    fn embedded(&self) -> bool {
        true
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(|e| {
            DbError::new(
                ErrorClass::Unreachable,
                format!("cannot open SQLite file {}: {e}", self.path.display()),
            )
        })?;
        let mut conn = conn;
        conn.set_prepared_statement_cache_capacity(64);
        let mut busy_timeout = Duration::ZERO;
        for (name, value) in &self.pragmas {
            if name == "busy_timeout" {
                let ms = value.parse().map_err(|_| {
                    DbError::new(
                        ErrorClass::Other("dsn".into()),
                        format!("busy_timeout must be milliseconds, not '{value}'"),
                    )
                })?;
                busy_timeout = Duration::from_millis(ms);
            } else {
                conn.pragma_update(None, name, value)
                    .map_err(|e| classify(&e))?;
            }
        }
        let evidence = Evidence::install(&mut conn, busy_timeout).map_err(|e| classify(&e))?;
        let mut session = LiteSession {
            conn,
            evidence,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            path: self.path.clone(),
            limit: None,
            clock: Instant::now(),
            due: Arc::new(AtomicU64::new(0)),
        };
        session.set_statement_timeout(self.statement_timeout)?;
        Ok(Box::new(session))
    }
    fn table_options(&self, _fillfactor: Option<u32>) -> String {
        String::new()
    }
}

struct LiteSession {
    conn: Connection,
    /// The busy handler's, the log hook's and COMMIT's counts (`Session::connection_figures`).
    evidence: Evidence,
    protocol: Protocol,
    /// Statement text, and the same split at its placeholders (for the simple protocol).
    stmts: Vec<(String, Vec<String>)>,
    sql: String,
    path: PathBuf,
    /// `--statement-timeout`: SQLite has none of its own, so the progress handler interrupts a
    /// statement once the clock passes `due` (microseconds since `clock`; 0 when no statement
    /// is watched).
    limit: Option<Duration>,
    clock: Instant,
    due: Arc<AtomicU64>,
}

fn bind(stmt: &mut rusqlite::Statement<'_>, params: &[Value]) -> rusqlite::Result<()> {
    for (i, v) in params.iter().enumerate() {
        match v {
            Value::Null => stmt.raw_bind_parameter(i + 1, rusqlite::types::Null)?,
            Value::Int(x) => stmt.raw_bind_parameter(i + 1, x)?,
            Value::Float(x) => stmt.raw_bind_parameter(i + 1, x)?,
            Value::Text(s) => stmt.raw_bind_parameter(i + 1, s.as_str())?,
        }
    }
    Ok(())
}

fn from_ref(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Float(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            Value::Text(String::from_utf8_lossy(t).into_owned())
        }
    }
}

/// Execute a bound statement; rows are counted, and kept when asked.
fn step(
    stmt: &mut rusqlite::Statement<'_>,
    mut keep: Option<&mut Vec<Vec<Value>>>,
) -> rusqlite::Result<u64> {
    if stmt.column_count() == 0 {
        return stmt.raw_execute().map(|n| n as u64);
    }
    let width = stmt.column_count();
    let mut rows = stmt.raw_query();
    let mut n = 0;
    while let Some(row) = rows.next()? {
        if let Some(keep) = keep.as_deref_mut() {
            keep.push(
                (0..width)
                    .map(|i| row.get_ref(i).map(from_ref).unwrap_or(Value::Null))
                    .collect(),
            );
        }
        n += 1;
    }
    Ok(n)
}

impl LiteSession {
    /// Run one statement under `--statement-timeout` when one is set; an interruption past
    /// the limit is a `StatementTimeout`.
    fn watched<T>(&mut self, run: impl FnOnce(&mut Self) -> rusqlite::Result<T>) -> DbResult<T> {
        let Some(limit) = self.limit else {
            return run(self).map_err(|e| classify(&e));
        };
        let due = (self.clock.elapsed() + limit).as_micros() as u64;
        self.due.store(due.max(1), Ordering::Relaxed);
        let outcome = run(self);
        self.due.store(0, Ordering::Relaxed);
        outcome.map_err(|e| match classify(&e) {
            e if e.class == ErrorClass::Interrupted => DbError::new(
                ErrorClass::StatementTimeout,
                format!(
                    "statement interrupted by dbduel after the statement timeout ({} s): {}",
                    limit.as_secs_f64(),
                    e.message
                ),
            ),
            e => e,
        })
    }

    /// Load rows through the bulk path; `replace` empties the table first.
    fn load_rows(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        replace: bool,
    ) -> DbResult<u64> {
        self.begin(true)?;
        if replace {
            self.batch(&format!("DELETE FROM {table}"))?;
        }
        let marks = vec!["?"; columns.len()].join(", ");
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({marks})",
            columns.join(", ")
        );
        let (mut row, mut n) = (Vec::new(), 0u64);
        while rows.next_row(&mut row) {
            {
                let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| classify(&e))?;
                bind(&mut stmt, &row)
                    .and_then(|_| stmt.raw_execute())
                    .map_err(|e| classify(&e))?;
            }
            n += 1;
            if n % 10_000 == 0 && !progress(10_000) {
                return Err(load_interrupted(self));
            }
            if n % COMMIT_ROWS == 0 {
                self.commit()?;
                self.begin(true)?;
            }
        }
        progress(n % 10_000);
        self.commit()?;
        Ok(n)
    }
}

/// The end of a run's cancel for an embedded database: `sqlite3_interrupt`, which stops the
/// running statement at its next step (a runaway query included); there is no connection to
/// give up, so abandoning interrupts again.
struct Interrupt(rusqlite::InterruptHandle);

impl Cancel for Interrupt {
    fn cancel(&self) -> Result<(), String> {
        self.0.interrupt();
        Ok(())
    }

    fn abandon(&self) {
        self.0.interrupt();
    }
}

impl Session for LiteSession {
    fn canceller(&self) -> Option<Arc<dyn Cancel>> {
        Some(Arc::new(Interrupt(self.conn.get_interrupt_handle())))
    }

    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        if self.protocol == Protocol::Prepared {
            self.conn.prepare_cached(sql).map_err(|e| classify(&e))?;
        }
        let parts = split_placeholders(sql)
            .iter()
            .map(|p| p.to_string())
            .collect();
        self.stmts.push((sql.to_string(), parts));
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn execute(
        &mut self,
        id: StmtId,
        params: &[Value],
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        self.watched(|me| {
            let (sql, parts) = &me.stmts[id.0];
            match me.protocol {
                // -M extended is refused at `open`.
                Protocol::Prepared | Protocol::Extended => {
                    let mut stmt = me.conn.prepare_cached(sql)?;
                    bind(&mut stmt, params).and_then(|_| step(&mut stmt, keep))
                }
                Protocol::Simple => {
                    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                    render_literals(&parts, params, &mut me.sql, quote_standard);
                    let mut stmt = me.conn.prepare(&me.sql)?;
                    step(&mut stmt, keep)
                }
            }
        })
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.watched(|me| me.conn.execute_batch(sql))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        self.watched(|me| {
            let mut rows = Vec::new();
            let mut stmt = me.conn.prepare(sql)?;
            step(&mut stmt, Some(&mut rows))?;
            Ok(rows)
        })
    }

    fn set_statement_timeout(&mut self, limit: Option<Duration>) -> DbResult<()> {
        self.limit = limit;
        self.due.store(0, Ordering::Relaxed);
        let handler = limit.map(|_| {
            let (clock, due) = (self.clock, self.due.clone());
            move || {
                let due = due.load(Ordering::Relaxed);
                due != 0 && clock.elapsed().as_micros() as u64 >= due
            }
        });
        self.conn
            .progress_handler(PROGRESS_OPS, handler)
            .map_err(|e| classify(&e))
    }

    fn begin(&mut self, write: bool) -> DbResult<()> {
        self.batch(if write { "BEGIN IMMEDIATE" } else { "BEGIN" })
    }
    fn commit(&mut self) -> DbResult<()> {
        let mark = self.evidence.mark();
        let done = self.batch("COMMIT");
        self.evidence.committed(mark, done.is_ok());
        done
    }
    fn rollback(&mut self) -> DbResult<()> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.batch("ROLLBACK")
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64> {
        self.load_rows(table, columns, rows, progress, mode == Load::Replace)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        let version = self.query_text("SELECT sqlite_version()")?;
        let version = version
            .first()
            .map(|r| r[0].to_string())
            .unwrap_or_default();
        let mut settings = std::collections::BTreeMap::new();
        for name in SETTINGS {
            let rows = self.query_text(&format!("PRAGMA {name}"))?;
            if let Some(v) = rows.first().and_then(|r| r.first()) {
                settings.insert(name.to_string(), v.to_string());
            }
        }
        // SQLite reads these as 0 under dbduel's own busy handler and log hook.
        for (name, value) in self.evidence.settings() {
            settings.insert(name.to_string(), value);
        }
        Ok(ServerInfo {
            version,
            settings,
            transport: super::tls::Transport::plain("embedded"),
            // One writer at a time: SQLite's transactions are serializable.
            isolation: "serializable".into(),
            table_engine: None,
        })
    }

    fn database_size(&mut self) -> DbResult<u64> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        Ok(size(&self.path) + size(std::path::Path::new(&wal)))
    }

    fn connection_figures(&mut self) -> Option<crate::engine::figures::ConnectionFigures> {
        Some(self.evidence.figures(&self.conn))
    }

    /// The files' size only: WAL checkpoints happen inside the clients' own connections.
    fn counters(&mut self) -> DbResult<Counters> {
        Ok(Counters {
            database_size_bytes: Some(self.database_size()?),
            ..Counters::default()
        })
    }

    fn statements(&mut self) -> DbResult<super::statements::Reading> {
        Ok(super::statements::Reading::Unavailable(
            "SQLite runs inside dbduel and keeps no cumulative figures per statement (sqlite3_stmt_status counts one prepared statement of one connection)".into(),
        ))
    }
}

/// Busy and locked are retryable; a missing table means the workload was not prepared.
fn classify(e: &rusqlite::Error) -> DbError {
    let class = match e {
        rusqlite::Error::SqliteFailure(f, msg) => match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorClass::Busy,
            ErrorCode::OperationInterrupted => ErrorClass::Interrupted,
            // SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE
            _ if matches!(f.extended_code, 1555 | 2067) => ErrorClass::UniqueViolation,
            _ if msg
                .as_deref()
                .is_some_and(|m| m.starts_with("no such table")) =>
            {
                ErrorClass::UndefinedTable
            }
            _ => ErrorClass::Other(format!("sqlite{}", f.extended_code)),
        },
        _ => ErrorClass::Other("sqlite".into()),
    };
    DbError::new(class, e.to_string())
}
