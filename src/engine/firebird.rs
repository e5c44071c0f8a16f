//! Firebird 3+ over its wire protocol (the pure-Rust client of `rsfbclient-rust`, at its statement
//! level: a handle per prepared statement, each statement outside `begin` in its own transaction):
//! a database is created on first connect when its file does not exist, snapshot (concurrency) or
//! read committed transactions that wait on conflicts, statements prepared once per session,
//! loading through prepared EXECUTE BLOCKs whose parameters are the rows, a `batch` that opens
//! with `SET TERM` run as an isql script one statement at a time, errors classified by message
//! (the same words whether raised by a statement or inside a procedure). Its cancel, for the statement timeout and the end of a run, deletes the session's
//! row of MON$STATEMENTS from another attachment. Its sessions' activity, for the wait sampler,
//! comes from MON$TRANSACTIONS, MON$STATEMENTS and MON$RECORD_STATS, at a lower rate than the
//! default (each read builds a snapshot of the database's attachments).
//! Its counters for `Session::stats` are read in `firebird/stats.rs`, with the lock manager's for a
//! server on this machine (`firebird/lock_table.rs`). The client keeps its socket
//! to itself: the session finds it among the process's descriptors by the address the client
//! told the server (`own_socket`), so that a read deadline (`Session::set_timeout`) and the end
//! of a run's shutdown (`Cancel::abandon`) hold on Firebird as on the other engines.

mod lock_table;
mod stats;

use rsfbclient_core::{
    Dialect, FbError, FirebirdClientDbOps, FirebirdClientSqlOps, FreeStmtOp, SqlType, StmtType,
    TrDataAccessMode, TrIsolationLevel, TrLockResolution, TrOp, TrRecordVersion,
    TransactionConfiguration,
};
use rsfbclient_rust::{RustFbClient, RustFbClientAttachmentConfig};

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::collections::BTreeMap;

use super::activity::{self, Activity};
use super::durability::{self, Durability, Level};
use super::login;
use super::tls::Transport;
use super::watchdog::Watchdog;
use super::{
    Counters, DbError, DbResult, Engine, EngineEntry, EngineOptions, ErrorClass, Load,
    LoadProgress, Protocol, RowSource, ServerInfo, Session, StmtId, Value, connect_error,
    load_interrupted, push_row_literals, quote_standard, render_literals, split_placeholders,
};
use crate::dsn::Dsn;
use crate::error::Error;

pub const ENTRY: EngineEntry = EngineEntry {
    name: "firebird",
    schemes: &["firebird"],
    about: "Firebird 3+ over its wire protocol; the database file is created when missing; \
            ?isolation=snapshot (default) or read_committed; ?lock_wait=wait (default), nowait or seconds",
    open,
    file: false,
    durability,
};

/// Forced writes off leaves writes to the system's cache: a power loss may corrupt the database.
fn durability(settings: &std::collections::BTreeMap<String, String>) -> Durability {
    Durability::of(match settings.get("forced_writes").map(String::as_str) {
        None => vec![durability::unread("forced_writes")],
        Some("0") => vec![(
            Level::Unsafe,
            "forced writes off: a power loss may corrupt the database".into(),
        )],
        Some(_) => vec![],
    })
}

/// Page size dbduel asks for when it creates a database (Firebird 3's largest); results show
/// the page size in effect.
const PAGE_SIZE: u32 = 16_384;

/// `PAGE_SIZE` as the Rust client must be given it: rsfbclient-rust 0.29 writes the
/// isc_dpb_page_size value big-endian where the server reads DPB integers little-endian, so
/// 16384 would arrive as 4194304, an invalid size the server replaces with its default (8 KiB).
/// The byte-swapped value arrives as 16384; every result records the page size in effect
/// (`page_size`), and a test checks that it is 16384.
const PAGE_SIZE_FOR_CLIENT: u32 = PAGE_SIZE.swap_bytes();
/// Largest EXECUTE BLOCK text when loading (Firebird 3 takes statements up to 64 KiB).
const BLOCK_BYTES: usize = 60_000;
/// Most INSERTs in one EXECUTE BLOCK (each is a context; Firebird allows 256 per statement).
const BLOCK_ROWS: u64 = 250;
/// Most parameters in one loading block: the Rust client reads a statement's description into
/// 1 KiB, where the server writes a byte for each parameter (more fail to prepare).
const BLOCK_PARAMS: usize = 900;
/// Rows per transaction when loading.
const COMMIT_ROWS: u64 = 50_000;

struct Firebird {
    host: String,
    port: u16,
    user: String,
    password: String,
    path: String,
    address: String,
    protocol: Protocol,
    isolation: TrIsolationLevel,
    lock_wait: TrLockResolution,
    connect_timeout: std::time::Duration,
    statement_timeout: Option<std::time::Duration>,
    /// Whether the server runs on this machine, where its lock table can be read.
    local: bool,
}

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    super::no_extended(protocol, "Firebird")?;
    opts.no_table_engine()?;
    opts.no_lazy_begin("a Firebird statement names its transaction, whose handle the transaction's start returns, so that start is a round trip of its own")?;
    dsn.only_params(
        "firebird",
        ["isolation", "lock_wait", "connect_timeout"].into_iter(),
    )?;
    let connect_timeout = login::connect_timeout(dsn.param("connect_timeout").map(str::to_string))
        .map_err(|e| Error::Usage(format!("--dsn {dsn}: {e}")))?;
    // Snapshot by default, Firebird's own default. Under it a transaction that waited on a row
    // a concurrent one updated and committed always fails (update conflict), so on a hot row
    // (tpcb's branches) the loser of each race retries into the next one; read committed does
    // not help on Firebird 3, whose waiting statements fail or see erased records as well.
    let isolation = match dsn.param("isolation").unwrap_or("snapshot") {
        "snapshot" | "concurrency" => TrIsolationLevel::Concurrency,
        "read_committed" => TrIsolationLevel::ReadCommited(TrRecordVersion::RecordVersion),
        other => {
            return Err(Error::Usage(format!(
                "unknown isolation '{other}' in --dsn {dsn}: use snapshot or read_committed"
            )));
        }
    };
    // WAIT by default, Firebird's own default (isql's SET TRANSACTION); NO WAIT fails a
    // statement that meets a changed row at once, and the run's retries do the waiting; a
    // number of seconds is WAIT with a LOCK TIMEOUT. Firebird 3.0.11 has been seen to commit
    // transactions in part on hot rows in every mode, less often without waits
    // (docs/connecting.md).
    let lock_wait = match dsn.param("lock_wait").unwrap_or("wait") {
        "wait" => TrLockResolution::Wait(None),
        "nowait" => TrLockResolution::NoWait,
        other => match other.parse::<u32>() {
            Ok(seconds) if seconds > 0 => TrLockResolution::Wait(Some(seconds)),
            _ => {
                return Err(Error::Usage(format!(
                    "unknown lock_wait '{other}' in --dsn {dsn}: use wait, nowait or a lock timeout in whole seconds (lock_wait=10)"
                )));
            }
        },
    };
    if dsn.database.is_empty() {
        return Err(Error::Usage(format!(
            "--dsn {dsn} names no database: give firebird://user:password@host:port/path/to/file.fdb (or an alias)"
        )));
    }
    // firebird://h/var/lib/x.fdb names /var/lib/x.fdb; a name without a slash is an alias.
    let path = if dsn.database.contains('/') {
        format!("/{}", dsn.database)
    } else {
        dsn.database.clone()
    };
    Ok(Box::new(Firebird {
        host: dsn.host.clone().unwrap_or_else(|| "localhost".into()),
        port: dsn.port.unwrap_or(3050),
        user: dsn.user.clone().unwrap_or_else(|| "SYSDBA".into()),
        password: dsn.password().unwrap_or("masterkey").to_string(),
        path,
        address: dsn.address(3050),
        protocol,
        isolation,
        lock_wait,
        connect_timeout,
        statement_timeout: opts.statement_timeout,
        local: dsn.is_local(),
    }))
}

type Db = <RustFbClient as FirebirdClientSqlOps>::DbHandle;
type Tr = <RustFbClient as FirebirdClientSqlOps>::TrHandle;
type Stmt = <RustFbClient as FirebirdClientSqlOps>::StmtHandle;

const DIALECT: Dialect = Dialect::D3;

impl Engine for Firebird {
    fn name(&self) -> &'static str {
        "firebird"
    }
    fn dialect(&self) -> &'static str {
        "firebird"
    }
    fn embedded(&self) -> bool {
        false
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let config = RustFbClientAttachmentConfig {
            host: self.host.clone(),
            port: self.port,
            db_name: self.path.clone(),
            user: self.user.clone(),
            pass: self.password.clone(),
            role_name: None,
        };
        let fail =
            |e: FbError| connect_error(classify(&e, true), "Firebird", &self.address, &self.user);
        let (cli, db) = attach(&config, self.connect_timeout, true).map_err(fail)?;
        let mut session = FbSession {
            cli,
            db,
            tr: None,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            conf: TransactionConfiguration {
                data_access: TrDataAccessMode::ReadWrite,
                isolation: self.isolation,
                lock_resolution: self.lock_wait,
            },
            config,
            connect_timeout: self.connect_timeout,
            watchdog: None,
            door: None,
            timeout: None,
            broken: false,
            local: self.local,
            lock_table: None,
        };
        let (attachment, socket) = session.attachment(self.port)?;
        session.door = Some(Arc::new(FbCancel {
            config: session.config.clone(),
            timeout: session.connect_timeout,
            attachment: AtomicI64::new(attachment),
            socket: Mutex::new(socket),
        }));
        session.set_statement_timeout(self.statement_timeout)?;
        Ok(Box::new(session))
    }
    fn table_options(&self, _fillfactor: Option<u32>) -> String {
        String::new()
    }
    /// Each sample makes the server build a snapshot of every attachment, transaction and
    /// statement (MON$ tables): fewer of them than the default.
    fn activity_hz(&self) -> Option<u32> {
        Some(ACTIVITY_HZ)
    }
    /// Each read snapshots every attachment: with 64 attachments, four samples a second took
    /// 1.8% of a run's CPU (BENCHMARKS.md, "Firebird's sampling, measured apart"), so past 32
    /// clients the rate falls (64: two a second).
    fn activity_sessions_per_second(&self) -> Option<u32> {
        Some(128)
    }
    /// The budget above is firm: three samples a second at 64 clients, where a short run's
    /// floor of samples asked for them, took 1.51% of the run's CPU (BENCHMARKS.md); a short
    /// run with many clients is left with fewer samples, and says so.
    fn activity_rate_floor(&self) -> bool {
        false
    }
}

/// The wait sampler's rate on Firebird (samples a second).
const ACTIVITY_HZ: u32 = 4;
/// The context variable that marks an attachment as dbduel's (`FbSession::attachment`).
const MARK: &str = "DBDUEL";

/// The run's attachments with a transaction open (dbduel's, by their mark, the sampler's own
/// left out), with each transaction's running or stalled statements: the statement's state,
/// whether the transaction may wait on locks (`MON$LOCK_TIMEOUT` 0 is NO WAIT), and the record
/// lock waits counted by the transaction and by the statement (`MON$RECORD_WAITS`). A new
/// transaction per sample (`query_text` commits each statement's), so each snapshot is fresh.
fn activity_sql() -> String {
    format!(
        "SELECT t.MON$ATTACHMENT_ID, s.MON$STATE, t.MON$LOCK_TIMEOUT, \
         tr.MON$RECORD_WAITS, sr.MON$RECORD_WAITS \
         FROM MON$TRANSACTIONS t JOIN MON$RECORD_STATS tr ON tr.MON$STAT_ID = t.MON$STAT_ID \
         LEFT JOIN MON$STATEMENTS s ON s.MON$TRANSACTION_ID = t.MON$TRANSACTION_ID \
         AND s.MON$STATE > 0 LEFT JOIN MON$RECORD_STATS sr ON sr.MON$STAT_ID = s.MON$STAT_ID \
         WHERE t.MON$ATTACHMENT_ID <> CURRENT_CONNECTION AND EXISTS (SELECT 1 FROM \
         MON$CONTEXT_VARIABLES v WHERE v.MON$ATTACHMENT_ID = t.MON$ATTACHMENT_ID \
         AND v.MON$VARIABLE_NAME = '{MARK}')"
    )
}

/// One attachment's activity from its rows of `activity_sql`: its busiest statement (a lock
/// wait, then running, then stalled), or idle in its transaction. A statement waits on a lock
/// when it is active, its transaction may wait, and both it and its transaction counted a
/// record wait: Firebird 3 counts a wait when it starts and shows no wait in progress, so a
/// statement still running after a wait it came through counts as waiting too (rarely: under
/// snapshot isolation a wait for a row another transaction then updates ends in a conflict),
/// and a prepared statement's count covers its earlier executions.
fn attachment_activity(rows: &[&Vec<Value>]) -> Activity {
    let int = |r: &Vec<Value>, i: usize| r.get(i).and_then(Value::as_i64);
    let (state, lock_wait) = rows
        .iter()
        .map(|r| {
            let may_wait = int(r, 2) != Some(0);
            let waited = int(r, 3).unwrap_or(0) > 0 && int(r, 4).unwrap_or(0) > 0;
            (int(r, 1), may_wait && waited && int(r, 1) == Some(1))
        })
        .max_by_key(|&(state, lock)| (lock, state == Some(1), state.is_some()))
        .unwrap_or((None, false));
    activity::firebird(state, lock_wait)
}

/// Attach to the database (creating its file first when asked and it does not exist). The
/// client has no timeout of its own: it attaches on a thread of its own, which a silent server
/// leaves behind once `timeout` has passed.
fn attach(
    config: &RustFbClientAttachmentConfig,
    timeout: Duration,
    create: bool,
) -> Result<(RustFbClient, Db), FbError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let config = config.clone();
    std::thread::spawn(move || {
        let mut cli = RustFbClient::new(rsfbclient_core::charset::UTF_8);
        let db = match cli.attach_database(&config, DIALECT, false) {
            Err(e) if create && missing_file(&e) => {
                cli = RustFbClient::new(rsfbclient_core::charset::UTF_8);
                cli.create_database(&config, Some(PAGE_SIZE_FOR_CLIENT), DIALECT)
            }
            other => other,
        };
        let _ = tx.send(db.map(|db| (cli, db)));
    });
    match rx.recv_timeout(timeout) {
        Ok(attached) => attached,
        Err(_) => {
            let e = std::io::Error::from(std::io::ErrorKind::TimedOut);
            Err(FbError::Io(login::explain_timeout(e, timeout)))
        }
    }
}

/// Cancels a session's running statement the way Firebird 3 offers another connection of the
/// same user: deleting its row of MON$STATEMENTS, active (1) or stalled between fetches (2)
/// (Firebird 3 has no statement timeout; the wire protocol's own cancel packet is not in the
/// client used here).
struct FbCancel {
    config: RustFbClientAttachmentConfig,
    timeout: Duration,
    /// The session's attachment, which changes when a broken session attaches again.
    attachment: AtomicI64,
    /// A second handle on the session's socket (`own_socket`), None where it was not found:
    /// its read deadline and its shutdown are the socket's own.
    socket: Mutex<Option<TcpStream>>,
}

impl FbCancel {
    /// The handle on the session's socket, whichever thread holds it.
    fn socket(&self) -> std::sync::MutexGuard<'_, Option<TcpStream>> {
        self.socket.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The socket of this process connected from `local` to port `server_port`, as a handle of its
/// own (a duplicate descriptor): rsfbclient keeps its socket private, and tells the server the
/// socket's local address (CLIENT_HOST), which no other socket of the process has with the
/// same peer port. Each candidate's addresses are read again on the duplicate, so a descriptor
/// closed and reused by another thread meanwhile is not taken. None when not found (a system
/// without /proc).
fn own_socket(local: SocketAddr, server_port: u16) -> Option<TcpStream> {
    use std::os::fd::{FromRawFd, RawFd};
    let ours = |s: &TcpStream| {
        s.local_addr().ok() == Some(local) && s.peer_addr().is_ok_and(|p| p.port() == server_port)
    };
    std::fs::read_dir("/proc/self/fd")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .find_map(|fd| {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
            if !link.to_string_lossy().starts_with("socket:") {
                return None;
            }
            // Borrowed, not owned: the descriptor stays the client's.
            let borrowed = std::mem::ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
            if !ours(&borrowed) {
                return None;
            }
            let dup = borrowed.try_clone().ok()?;
            ours(&dup).then_some(dup)
        })
}

impl super::Cancel for FbCancel {
    fn cancel(&self) -> Result<(), String> {
        let (mut cli, mut db) =
            attach(&self.config, self.timeout, false).map_err(|e| e.to_string())?;
        let conf = TransactionConfiguration {
            data_access: TrDataAccessMode::ReadWrite,
            isolation: TrIsolationLevel::ReadCommited(TrRecordVersion::RecordVersion),
            lock_resolution: TrLockResolution::NoWait,
        };
        let sql = format!(
            "DELETE FROM MON$STATEMENTS WHERE MON$ATTACHMENT_ID = {} AND MON$STATE > 0",
            self.attachment.load(Ordering::SeqCst)
        );
        let done = cli.begin_transaction(&mut db, conf).and_then(|mut tr| {
            cli.exec_immediate(&mut db, &mut tr, DIALECT, &sql)?;
            cli.transaction_operation(&mut tr, TrOp::Commit)
        });
        let _ = cli.detach_database(&mut db);
        done.map_err(|e| e.to_string())
    }
    /// The session's socket shut down: its reads and writes fail at once.
    fn abandon(&self) {
        if let Some(s) = self.socket().as_ref() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// A statement: its SQL split at the placeholders, and its handle once prepared.
struct FbStmt {
    sql: String,
    parts: Vec<String>,
    prepared: Option<(StmtType, Stmt)>,
}

struct FbSession {
    cli: RustFbClient,
    db: Db,
    /// The transaction `begin` opened; None: each statement runs in its own.
    tr: Option<Tr>,
    protocol: Protocol,
    stmts: Vec<FbStmt>,
    sql: String,
    conf: TransactionConfiguration,
    /// How to attach again, for the watchdog's cancelling connection.
    config: RustFbClientAttachmentConfig,
    connect_timeout: Duration,
    /// `--statement-timeout`, kept by the client (Firebird 3 has none).
    watchdog: Option<Watchdog>,
    /// How another attachment cancels this session's statement (its attachment's id), and
    /// the handle on its socket.
    door: Option<Arc<FbCancel>>,
    /// `set_timeout`'s bound on each read and write, set again on a new connection.
    timeout: Option<Duration>,
    /// The wire protocol may be out of step (an error of the client itself, of a lazy
    /// response read in place of the call's own, or of a commit or rollback): the next use
    /// attaches again, and nothing more is sent on this connection.
    broken: bool,
    /// Whether the server runs on this machine (`Firebird::local`).
    local: bool,
    /// The lock manager's figures, for `stats`: None until the first reading looked for its
    /// table; then the table, or why there is none (said once).
    lock_table: Option<Result<lock_table::LockTable, String>>,
}

impl Drop for FbSession {
    fn drop(&mut self) {
        if self.broken {
            return;
        }
        if let Some(mut tr) = self.tr.take() {
            let _ = self.cli.transaction_operation(&mut tr, TrOp::Rollback);
        }
        for stmt in &mut self.stmts {
            if let Some((_, h)) = stmt.prepared.as_mut() {
                let _ = self.cli.free_statement(h, FreeStmtOp::Drop);
            }
        }
        let _ = self.cli.detach_database(&mut self.db);
    }
}

fn to_fb(v: &Value) -> SqlType {
    match v {
        Value::Null => SqlType::Null,
        Value::Int(i) => SqlType::Integer(*i),
        Value::Float(f) => SqlType::Floating(*f),
        Value::Text(s) => SqlType::Text(s.clone()),
    }
}

/// An EXECUTE BLOCK that inserts `rows` rows into `table`, their values its parameters, each
/// typed as its column (`TYPE OF COLUMN`), so that one prepared block takes any rows.
fn insert_block(table: &str, columns: &[&str], rows: usize) -> String {
    use std::fmt::Write;
    let mut s = String::from("EXECUTE BLOCK (");
    for r in 0..rows {
        for (c, column) in columns.iter().enumerate() {
            let sep = if r + c > 0 { ", " } else { "" };
            let _ = write!(
                s,
                "{sep}p{} TYPE OF COLUMN {table}.{column} = ?",
                r * columns.len() + c
            );
        }
    }
    s.push_str(") AS BEGIN\n");
    let head = format!("INSERT INTO {table} ({}) VALUES (", columns.join(", "));
    for r in 0..rows {
        s.push_str(&head);
        for c in 0..columns.len() {
            let sep = if c > 0 { ", " } else { "" };
            let _ = write!(s, "{sep}:p{}", r * columns.len() + c);
        }
        s.push_str(");\n");
    }
    s.push_str("END");
    s
}

fn from_fb(v: &SqlType) -> Value {
    match v {
        SqlType::Null => Value::Null,
        SqlType::Integer(i) => Value::Int(*i),
        SqlType::Floating(f) => Value::Float(*f),
        SqlType::Text(s) => Value::Text(s.trim_end().to_string()),
        SqlType::Boolean(b) => Value::Int(*b as i64),
        SqlType::Timestamp(t) => Value::Text(t.to_string()),
        SqlType::Int128(i) => Value::Text(i.to_string()),
        SqlType::Binary(b) => Value::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

impl FbSession {
    /// Rows go in EXECUTE BLOCKs of INSERTs whose values are the block's parameters, typed as
    /// their columns (`insert_block`), prepared once per table and executed with block after
    /// block of rows (one round trip each): the server compiles the block once, where a block
    /// of literals was compiled for every 250 rows, which was most of a load's time (server
    /// CPU). Committed about every 50,000 rows; several sessions may append at once. A table
    /// whose block cannot be prepared (its columns not found as named, a type a parameter
    /// cannot take) goes as blocks of literals instead.
    fn append(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        self.begin(true)?;
        let Some(per_block) = self.rows_per_block(table, columns)? else {
            return self.append_literals(table, columns, rows, progress);
        };
        let full = insert_block(table, columns, per_block);
        let mut stmt = match self.in_tr(|cli, db, tr| cli.prepare_statement(db, tr, DIALECT, &full))
        {
            Ok(stmt) => stmt,
            // The connection itself failed: its error, not the literals' "transaction lost".
            Err(e) if self.broken => return Err(e),
            Err(_) => return self.append_literals(table, columns, rows, progress),
        };
        let loaded = self.append_blocks(&mut stmt.1, table, columns, per_block, rows, progress);
        if !self.broken {
            let _ = self.cli.free_statement(&mut stmt.1, FreeStmtOp::Drop);
        }
        let n = loaded?;
        self.commit()?;
        Ok(n)
    }

    /// `append`'s rows, `per_block` at a time through the prepared block `stmt`, the last ones
    /// through a block of their number.
    fn append_blocks(
        &mut self,
        stmt: &mut Stmt,
        table: &str,
        columns: &[&str],
        per_block: usize,
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        let (mut row, mut params) = (Vec::new(), Vec::with_capacity(per_block * columns.len()));
        let (mut n, mut in_block) = (0u64, 0usize);
        loop {
            let more = rows.next_row(&mut row);
            if more {
                params.extend(row.iter().map(to_fb));
                (n, in_block) = (n + 1, in_block + 1);
                if in_block < per_block {
                    continue;
                }
            }
            if in_block == 0 {
                return Ok(n);
            }
            let block = std::mem::take(&mut params);
            if in_block == per_block {
                self.in_tr(|cli, db, tr| cli.execute(db, tr, stmt, block).map(drop))?;
            } else {
                // The last rows, fewer than a block: a block of their own.
                let sql = insert_block(table, columns, in_block);
                self.in_tr(|cli, db, tr| {
                    let (_, mut h) = cli.prepare_statement(db, tr, DIALECT, &sql)?;
                    let done = cli.execute(db, tr, &mut h, block).map(drop);
                    let _ = cli.free_statement(&mut h, FreeStmtOp::Drop);
                    done
                })?;
            }
            if !progress(in_block as u64) {
                return Err(load_interrupted(self));
            }
            if !more {
                return Ok(n);
            }
            if n >= COMMIT_ROWS && n % COMMIT_ROWS < per_block as u64 {
                self.commit()?;
                self.begin(true)?;
            }
            in_block = 0;
        }
    }

    /// How many rows a parameter block of `table` takes: at most `BLOCK_ROWS` and
    /// `BLOCK_PARAMS` parameters, its text and its message of parameters (each column as wide
    /// as declared, with its null flag) under `BLOCK_BYTES`. None: the columns are not all found under these names.
    fn rows_per_block(&mut self, table: &str, columns: &[&str]) -> DbResult<Option<usize>> {
        let stored = |name: &str| match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => name.to_ascii_uppercase(),
        };
        let widths = self.query_text(&format!(
            "SELECT TRIM(rf.RDB$FIELD_NAME), f.RDB$FIELD_LENGTH FROM RDB$RELATION_FIELDS rf \
             JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
             WHERE rf.RDB$RELATION_NAME = '{}'",
            stored(table).replace('\'', "''")
        ))?;
        let mut message = 0usize;
        for column in columns {
            let name = stored(column);
            let Some(Value::Int(width)) = widths
                .iter()
                .find(|w| matches!(&w[0], Value::Text(t) if *t == name))
                .map(|w| w[1].clone())
            else {
                return Ok(None);
            };
            // A VARCHAR's length word, the null flag, alignment.
            message += width.max(0) as usize + 8;
        }
        let text = insert_block(table, columns, 2).len() - insert_block(table, columns, 1).len();
        let rows = (BLOCK_BYTES / text.max(1))
            .min(BLOCK_BYTES / message.max(1))
            .min(BLOCK_PARAMS / columns.len().max(1))
            .min(BLOCK_ROWS as usize);
        Ok(Some(rows.max(1)))
    }

    /// Rows as literals in EXECUTE BLOCK statements of up to 250 rows or 60 KB, each compiled
    /// by the server (one round trip each), committed about every 50,000 rows.
    fn append_literals(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        let head = format!("INSERT INTO {table} ({}) VALUES (", columns.join(", "));
        let (mut row, mut n, mut in_block) = (Vec::new(), 0u64, 0u64);
        let mut block = String::with_capacity(BLOCK_BYTES + 4096);
        let flush = |s: &mut Self, block: &mut String| -> DbResult<()> {
            block.push_str("END");
            let r = s.batch(block);
            block.clear();
            r
        };
        while rows.next_row(&mut row) {
            if block.is_empty() {
                block.push_str("EXECUTE BLOCK AS BEGIN\n");
            }
            block.push_str(&head);
            push_row_literals(&row, &mut block, quote_standard);
            block.push_str(");\n");
            (n, in_block) = (n + 1, in_block + 1);
            if block.len() >= BLOCK_BYTES || in_block == BLOCK_ROWS {
                flush(self, &mut block)?;
                if !progress(in_block) {
                    return Err(load_interrupted(self));
                }
                in_block = 0;
                if n >= COMMIT_ROWS && n % COMMIT_ROWS < 1000 {
                    self.commit()?;
                    self.begin(true)?;
                }
            }
        }
        if !block.is_empty() {
            flush(self, &mut block)?;
            progress(in_block);
        }
        self.commit()?;
        Ok(n)
    }

    /// Run `f` in the open transaction, or in one of its own that commits on success, under
    /// the statement timeout when one is set.
    fn in_tr<T>(
        &mut self,
        f: impl FnOnce(&mut RustFbClient, &mut Db, &mut Tr) -> Result<T, FbError>,
    ) -> DbResult<T> {
        self.heal()?;
        match self.watchdog.take() {
            None => self.in_tr_now(f),
            Some(dog) => {
                let outcome = dog.run(|| self.in_tr_now(f));
                let sent = dog.cancel_sent().then(|| dog.limit());
                self.watchdog = Some(dog);
                // A statement the cancel ended took it (and its session attaches again).
                let took_it = matches!(&outcome, Err(e) if e.message.contains(CANCELLED));
                match sent {
                    Some(limit) if !took_it => self.take_late_cancel(outcome, limit),
                    _ => outcome,
                }
            }
        }
    }

    /// The watchdog sent a cancel, but the statement ended first (with its success, or an
    /// error of its own such as a lock timeout). Firebird keeps a cancel for its attachment
    /// and fails the attachment's next call with "operation was cancelled", which would fall
    /// on an innocent statement. A throwaway transaction's start
    /// takes it. Then the session attaches again (a cancelled call leaves rsfbclient's
    /// protocol state in doubt), and a transaction still open is lost: its statement, which
    /// ran past the limit, is reported as the timeout that ended it. A statement in a
    /// transaction of its own has committed, and keeps its success.
    fn take_late_cancel<T>(&mut self, outcome: DbResult<T>, limit: Duration) -> DbResult<T> {
        let probe = self
            .cli
            .begin_transaction(&mut self.db, self.conf)
            .and_then(|mut tr| self.cli.transaction_operation(&mut tr, TrOp::Rollback));
        let Err(e) = probe else {
            return outcome;
        };
        let error = self.failed(&e, true);
        let taken = matches!(&e, FbError::Sql { msg, .. } if msg.contains(CANCELLED));
        match outcome {
            Ok(_) if taken && self.tr.is_some() => {
                let limit = limit.as_secs_f64();
                Err(DbError::new(
                    ErrorClass::StatementTimeout,
                    format!(
                        "statement ran past the statement timeout ({limit} s) and ended just before dbduel's cancel arrived; the cancel ended its transaction: {}",
                        error.message
                    ),
                ))
            }
            other => other,
        }
    }

    fn in_tr_now<T>(
        &mut self,
        f: impl FnOnce(&mut RustFbClient, &mut Db, &mut Tr) -> Result<T, FbError>,
    ) -> DbResult<T> {
        if let Some(tr) = self.tr.as_mut() {
            return f(&mut self.cli, &mut self.db, tr).map_err(|e| self.failed(&e, false));
        }
        let mut tr = self
            .cli
            .begin_transaction(&mut self.db, self.conf)
            .map_err(|e| self.failed(&e, true))?;
        match f(&mut self.cli, &mut self.db, &mut tr) {
            Ok(v) => {
                self.cli
                    .transaction_operation(&mut tr, TrOp::Commit)
                    .map_err(|e| self.failed(&e, true))?;
                Ok(v)
            }
            Err(e) => {
                let error = self.failed(&e, false);
                if let Err(e) = self.cli.transaction_operation(&mut tr, TrOp::Rollback) {
                    self.failed(&e, true);
                }
                Err(error)
            }
        }
    }

    /// The error as a `DbError`; the session is marked broken when the client's protocol
    /// state may be out of step: any error of the client itself, any error of a begin, commit
    /// or rollback (`always`), and a cancel or an invalid handle, which rsfbclient may have read
    /// from a lazy response (a statement's free) in place of the call's own, left unread.
    fn failed(&mut self, e: &FbError, always: bool) -> DbError {
        let suspect = match e {
            FbError::Sql { msg, .. } => {
                msg.contains(CANCELLED) || (msg.contains("invalid") && msg.contains(" handle"))
            }
            FbError::Io(_) | FbError::Other(_) => true,
        };
        self.broken |= always || suspect;
        match e {
            FbError::Io(io) if self.timeout.is_some() && login::is_deadline(io) => {
                let said = login::explain_deadline(io.kind().into(), self.timeout);
                classify(&FbError::Io(said), false)
            }
            _ => classify(e, false),
        }
    }

    /// A broken session attaches again before it is used: its transaction, prepared
    /// statements and connection are left to the server, which rolls the transaction back.
    /// A statement of a transaction that was open then fails as a lost connection: it must
    /// not run on its own, outside the transaction it belongs to.
    fn heal(&mut self) -> DbResult<()> {
        if !self.broken {
            return Ok(());
        }
        let lost = self.tr.is_some();
        // A session bounded by `set_timeout` attaches again within that bound too: a stalled
        // server must not hold it for the whole connect timeout.
        let within = self
            .timeout
            .map_or(self.connect_timeout, |t| t.min(self.connect_timeout));
        let (cli, db) = attach(&self.config, within, false).map_err(|e| {
            let why = match &e {
                FbError::Io(io) if within < self.connect_timeout && login::is_deadline(io) => {
                    login::explain_deadline(io.kind().into(), Some(within)).to_string()
                }
                _ => classify(&e, true).message,
            };
            DbError::new(
                ErrorClass::ConnectionLost,
                format!("attaching again after a protocol error: {why}"),
            )
        })?;
        self.cli = cli;
        self.db = db;
        self.tr = None;
        self.broken = false;
        for stmt in &mut self.stmts {
            stmt.prepared = None;
        }
        let (attachment, socket) = self.attachment(self.config.port)?;
        if let Some(door) = &self.door {
            door.attachment.store(attachment, Ordering::SeqCst);
            *door.socket() = socket;
        }
        self.set_timeout(self.timeout);
        if lost {
            return Err(DbError::new(
                ErrorClass::ConnectionLost,
                "the transaction was lost with its connection's protocol state",
            ));
        }
        Ok(())
    }

    /// This session's attachment (CURRENT_CONNECTION), for its cancel; the attachment is
    /// marked as dbduel's (a context variable, which MON$CONTEXT_VARIABLES shows), so that the
    /// wait sampler tells the run's attachments from others. With it, a handle on the
    /// session's socket, found by the address the client gave the server (`own_socket`).
    fn attachment(&mut self, server_port: u16) -> DbResult<(i64, Option<TcpStream>)> {
        let id = self.query_text(&format!(
            "SELECT CURRENT_CONNECTION, RDB$SET_CONTEXT('USER_SESSION', '{MARK}', 1), \
             RDB$GET_CONTEXT('SYSTEM', 'CLIENT_HOST') FROM RDB$DATABASE"
        ))?;
        let row = id.first().cloned().unwrap_or_default();
        let Some(Value::Int(attachment)) = row.first().cloned() else {
            return Err(DbError::new(
                ErrorClass::Other("firebird".into()),
                format!("CURRENT_CONNECTION gave {id:?}"),
            ));
        };
        let local = match row.get(2) {
            Some(Value::Text(host)) => host.parse::<SocketAddr>().ok(),
            _ => None,
        };
        Ok((attachment, local.and_then(|l| own_socket(l, server_port))))
    }

    /// Execute a prepared handle: rows fetched (and kept when asked) for a SELECT, the
    /// output row of EXECUTE PROCEDURE or RETURNING, otherwise the affected count.
    fn run_handle(
        cli: &mut RustFbClient,
        db: &mut Db,
        tr: &mut Tr,
        kind: StmtType,
        h: &mut Stmt,
        params: Vec<SqlType>,
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> Result<u64, FbError> {
        match kind {
            StmtType::Select | StmtType::SelectForUpd => {
                cli.execute(db, tr, h, params)?;
                let mut n = 0;
                let mut keep = keep;
                while let Some(row) = cli.fetch(db, tr, h)? {
                    n += 1;
                    if let Some(k) = keep.as_deref_mut() {
                        k.push(row.iter().map(|c| from_fb(&c.value)).collect());
                    }
                }
                cli.free_statement(h, FreeStmtOp::Close)?;
                Ok(n)
            }
            StmtType::ExecProcedure => {
                let row = cli.execute2(db, tr, h, params)?;
                if let Some(k) = keep.filter(|_| !row.is_empty()) {
                    k.push(row.iter().map(|c| from_fb(&c.value)).collect());
                }
                Ok(1)
            }
            _ => Ok(cli.execute(db, tr, h, params)? as u64),
        }
    }

    /// Prepare, run and drop one statement of text.
    fn run_text(&mut self, sql: &str, keep: Option<&mut Vec<Vec<Value>>>) -> DbResult<u64> {
        self.in_tr(|cli, db, tr| {
            let (kind, mut h) = cli.prepare_statement(db, tr, DIALECT, sql)?;
            let result = Self::run_handle(cli, db, tr, kind, &mut h, Vec::new(), keep);
            let _ = cli.free_statement(&mut h, FreeStmtOp::Drop);
            result
        })
    }
}

impl Session for FbSession {
    /// Statements are prepared on the server at their first execution (Firebird prepares
    /// inside a transaction).
    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        self.stmts.push(FbStmt {
            sql: sql.to_string(),
            parts: split_placeholders(sql)
                .iter()
                .map(|p| p.to_string())
                .collect(),
            prepared: None,
        });
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn execute(
        &mut self,
        id: StmtId,
        params: &[Value],
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        if self.protocol == Protocol::Simple {
            let parts: Vec<&str> = self.stmts[id.0].parts.iter().map(String::as_str).collect();
            let mut text = std::mem::take(&mut self.sql);
            render_literals(&parts, params, &mut text, quote_standard);
            let result = self.run_text(&text, keep);
            self.sql = text;
            return result;
        }
        let params: Vec<SqlType> = params.iter().map(to_fb).collect();
        self.heal()?;
        let mut stmt = self.stmts[id.0].prepared.take();
        // The text is needed only for the first execution, which prepares it.
        let sql = stmt.is_none().then(|| self.stmts[id.0].sql.clone());
        let result = self.in_tr(|cli, db, tr| {
            if let Some(sql) = &sql {
                stmt = Some(cli.prepare_statement(db, tr, DIALECT, sql)?);
            }
            let (kind, h) = stmt.as_mut().expect("prepared");
            Self::run_handle(cli, db, tr, *kind, h, params, keep)
        });
        self.stmts[id.0].prepared = stmt;
        result
    }

    /// `SET TRANSACTION ... ISOLATION LEVEL ...` is the client's business in Firebird (isql
    /// handles it too): it sets the isolation of the session's later transactions. So is
    /// `SET TERM`: a text that opens with it is a script in isql's manner (PSQL bodies hold
    /// semicolons), run one statement at a time, as the wire protocol takes them.
    fn batch(&mut self, sql: &str) -> DbResult<()> {
        if let Some(isolation) = set_transaction(sql)? {
            self.conf.isolation = isolation;
            return Ok(());
        }
        if let Some(statements) = script(sql) {
            for statement in statements {
                self.in_tr(|cli, db, tr| cli.exec_immediate(db, tr, DIALECT, &statement))?;
            }
            return Ok(());
        }
        self.in_tr(|cli, db, tr| cli.exec_immediate(db, tr, DIALECT, sql))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        self.run_text(sql, Some(&mut rows))?;
        Ok(rows)
    }

    /// The bound is the socket's own (found by `own_socket`): a read past it fails the call,
    /// and the session attaches again at its next use. Where the socket was not found, the
    /// session has no bound, as before.
    fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
        if let Some(door) = &self.door
            && let Some(s) = door.socket().as_ref()
        {
            let _ = s.set_read_timeout(timeout);
            let _ = s.set_write_timeout(timeout);
        }
    }

    /// Firebird 3 has no statement timeout: a watchdog thread cancels a statement past it.
    fn set_statement_timeout(&mut self, limit: Option<Duration>) -> DbResult<()> {
        self.watchdog = None;
        let (Some(limit), Some(door)) = (limit, self.door.clone()) else {
            return Ok(());
        };
        self.watchdog = Some(Watchdog::new(limit, door));
        Ok(())
    }

    /// The end of a run cancels a statement still running (a lock wait that never ends) the
    /// way the statement timeout does: its row of MON$STATEMENTS deleted from another
    /// attachment.
    fn canceller(&self) -> Option<Arc<dyn super::Cancel>> {
        self.door.clone().map(|door| door as Arc<dyn super::Cancel>)
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        if let Some(mut old) = self.tr.take()
            && !self.broken
            && let Err(e) = self.cli.transaction_operation(&mut old, TrOp::Rollback)
        {
            self.failed(&e, true);
        }
        self.heal()?;
        let tr = self
            .cli
            .begin_transaction(&mut self.db, self.conf)
            .map_err(|e| self.failed(&e, true))?;
        self.tr = Some(tr);
        Ok(())
    }
    /// A broken session's transaction is lost: its commit fails as a lost connection.
    fn commit(&mut self) -> DbResult<()> {
        match self.tr.take() {
            Some(_) if self.broken => Err(DbError::new(
                ErrorClass::ConnectionLost,
                "the transaction was lost with its connection's protocol state",
            )),
            Some(mut tr) => self
                .cli
                .transaction_operation(&mut tr, TrOp::Commit)
                .map_err(|e| self.failed(&e, true)),
            None => Ok(()),
        }
    }
    /// A broken session's transaction is rolled back by the server with its connection.
    fn rollback(&mut self) -> DbResult<()> {
        match self.tr.take() {
            Some(_) if self.broken => Ok(()),
            Some(mut tr) => self
                .cli
                .transaction_operation(&mut tr, TrOp::Rollback)
                .map_err(|e| self.failed(&e, true)),
            None => Ok(()),
        }
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64> {
        if mode == Load::Replace {
            self.batch(&format!("DELETE FROM {table}"))?;
        }
        self.append(table, columns, rows, progress)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        let rows = self.query_text(
            "SELECT rdb$get_context('SYSTEM', 'ENGINE_VERSION'), MON$PAGE_SIZE, MON$PAGE_BUFFERS, \
             MON$FORCED_WRITES, MON$SWEEP_INTERVAL, MON$ODS_MAJOR, MON$SQL_DIALECT, \
             rdb$get_context('SYSTEM', 'ISOLATION_LEVEL'), \
             rdb$get_context('SYSTEM', 'WIRE_ENCRYPTED'), \
             (SELECT MON$LOCK_TIMEOUT FROM MON$TRANSACTIONS \
              WHERE MON$TRANSACTION_ID = CURRENT_TRANSACTION) FROM MON$DATABASE",
        )?;
        let row = rows.into_iter().next().unwrap_or_default();
        let get = |i: usize| row.get(i).map(Value::to_string).unwrap_or_default();
        let settings = [
            ("page_size", 1),
            ("page_buffers", 2),
            ("forced_writes", 3),
            ("sweep_interval", 4),
            ("ods_major", 5),
            ("sql_dialect", 6),
            ("isolation_level", 7),
        ]
        .into_iter()
        .map(|(k, i)| (k.to_string(), get(i)))
        .chain([("lock_wait".to_string(), lock_wait_words(&get(9)))])
        .collect();
        // Firebird's own wire encryption (ARC4, after an SRP login), as its WireCrypt allows.
        let note = if get(8).eq_ignore_ascii_case("TRUE") {
            "Firebird wire encryption (Arc4)"
        } else {
            "no wire encryption"
        };
        Ok(ServerInfo {
            version: format!("Firebird {}", get(0)),
            settings,
            transport: Transport {
                note: Some(note.into()),
                ..Transport::plain("tcp")
            },
            isolation: super::isolation_words(&get(7)),
            table_engine: None,
        })
    }

    fn database_size(&mut self) -> DbResult<u64> {
        let rows = self.query_text("SELECT MON$PAGES * MON$PAGE_SIZE FROM MON$DATABASE")?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0) as u64)
    }

    /// The run's attachments from the MON$ tables, one activity each (`attachment_activity`);
    /// an attachment with no transaction open is idle between transactions.
    fn activity(&mut self) -> DbResult<Option<Vec<Activity>>> {
        let rows = self.query_text(&activity_sql())?;
        let mut by_attachment: BTreeMap<i64, Vec<&Vec<Value>>> = BTreeMap::new();
        for row in &rows {
            let id = row.first().and_then(Value::as_i64).unwrap_or(0);
            by_attachment.entry(id).or_default().push(row);
        }
        Ok(Some(
            by_attachment
                .values()
                .map(|rows| attachment_activity(rows))
                .collect(),
        ))
    }
    /// The database's page and record counters (`firebird/stats.rs`), and the lock manager's
    /// where its table can be read (`firebird/lock_table.rs`); why not is said once.
    fn stats(&mut self) -> DbResult<Option<super::stats::Reading>> {
        let mut reading = stats::read(self)?;
        let Some(r) = reading.as_mut() else {
            return Ok(reading);
        };
        const WHAT: &str = "the lock manager's figures";
        if self.lock_table.is_none() {
            let local = self.local;
            let found = lock_table::LockTable::find(self, local);
            if let Err(why) = &found {
                r.unread.push(format!("{WHAT}: {why}"));
            }
            self.lock_table = Some(found);
        }
        if let Some(Ok(table)) = &self.lock_table {
            match table.read() {
                Ok(stats) => r.stats.extend(stats),
                Err(why) => {
                    r.unread.push(format!("{WHAT}: they stopped: {why}"));
                    self.lock_table = Some(Err(why));
                }
            }
        }
        Ok(reading)
    }

    /// Size only: Firebird counts no checkpoints, and its sweeps are not autovacuums.
    fn counters(&mut self) -> DbResult<Counters> {
        Ok(Counters {
            database_size_bytes: self.database_size().ok(),
            ..Counters::default()
        })
    }

    fn statements(&mut self) -> DbResult<super::statements::Reading> {
        Ok(super::statements::Reading::Unavailable(
            "Firebird keeps no cumulative figures per statement outside its trace API (MON$STATEMENTS holds only the statements prepared now, MON$RECORD_STATS their attachments' totals)".into(),
        ))
    }
}

/// How the session's transactions meet a lock, from their MON$LOCK_TIMEOUT as the server
/// keeps it: -1 waits, 0 does not, more waits that many seconds.
fn lock_wait_words(timeout: &str) -> String {
    match timeout.trim() {
        "-1" => "wait".into(),
        "0" => "nowait".into(),
        "" | "NULL" => String::new(),
        seconds => format!("wait {seconds} s"),
    }
}

/// The isolation a `SET TRANSACTION` statement asks for (None: another statement). Firebird's
/// SERIALIZABLE is SNAPSHOT TABLE STABILITY (table-level consistency).
fn set_transaction(sql: &str) -> DbResult<Option<TrIsolationLevel>> {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    if words.len() < 2 || words[0] != "SET" || words[1] != "TRANSACTION" {
        return Ok(None);
    }
    let level = match words.iter().position(|w| w == "LEVEL") {
        Some(i) => words[i + 1..].join(" "),
        None => String::new(),
    };
    Ok(Some(match level.as_str() {
        "SERIALIZABLE" | "SNAPSHOT TABLE STABILITY" => TrIsolationLevel::Consistency,
        "SNAPSHOT" | "REPEATABLE READ" => TrIsolationLevel::Concurrency,
        "READ COMMITTED" | "READ COMMITTED RECORD_VERSION" => {
            TrIsolationLevel::ReadCommited(TrRecordVersion::RecordVersion)
        }
        "READ COMMITTED NO RECORD_VERSION" => {
            TrIsolationLevel::ReadCommited(TrRecordVersion::NoRecordVersion)
        }
        _ => {
            return Err(DbError::new(
                ErrorClass::Other("isolation".into()),
                format!(
                    "'{}': dbduel's Firebird sessions take SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, SNAPSHOT [TABLE STABILITY] or READ COMMITTED [NO] RECORD_VERSION",
                    sql.trim()
                ),
            ));
        }
    }))
}

/// The statements of an isql-style script, a text that opens with `SET TERM <t> ;` (None:
/// another text). A statement ends with the terminator in force at the end of a line;
/// `SET TERM <t2> <t>` lines change the terminator and are not sent.
fn script(sql: &str) -> Option<Vec<String>> {
    let set_term = |line: &str| -> Option<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [set, term, new, ..]
                if set.eq_ignore_ascii_case("SET") && term.eq_ignore_ascii_case("TERM") =>
            {
                Some(new.to_string())
            }
            _ => None,
        }
    };
    let first = sql.lines().find(|l| !l.trim().is_empty())?;
    set_term(first)?;
    let (mut terminator, mut out, mut current) = (";".to_string(), Vec::new(), String::new());
    for line in sql.lines() {
        let trimmed = line.trim_end();
        if current.trim().is_empty()
            && let Some(new) = set_term(trimmed.trim_end_matches(terminator.as_str()))
        {
            terminator = new;
            current.clear();
            continue;
        }
        match trimmed.strip_suffix(terminator.as_str()) {
            Some(end) => {
                current.push_str(end);
                let statement = current.trim();
                if !statement.is_empty() {
                    out.push(statement.to_string());
                }
                current.clear();
            }
            None => {
                current.push_str(line);
                current.push('\n');
            }
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
    Some(out)
}

/// Whether connecting failed because the database file does not exist (then it is created).
fn missing_file(e: &FbError) -> bool {
    let text = e.to_string();
    text.contains("I/O error") && text.contains("No such file")
}

/// Client errors after which the connection's protocol state is unknown.
const DESYNC: &[&str] = &[
    "Invalid Xsqlda",
    "missing bytes",
    "Fetch returned no columns",
    "too many empty batches",
];

/// Firebird's words for a cancelled call (isc_cancelled).
const CANCELLED: &str = "operation was cancelled";

/// Firebird errors by message (the pure client reports the SQLCODE, not the GDS code).
fn classify(e: &FbError, connecting: bool) -> DbError {
    match e {
        FbError::Sql { msg, code } => {
            let has = |s: &str| msg.contains(s);
            let class = if has("update conflicts with concurrent update")
                || has("concurrent transaction number")
            {
                ErrorClass::Serialization
            } else if has("DBDUEL_MISSED_ROW") {
                // Raised by dbduel's own procedures (TPC-C's) after an UPDATE that changed no
                // row it must change.
                ErrorClass::MissedRow
            } else if has("deadlock") {
                ErrorClass::Deadlock
            } else if has("lock conflict on no wait transaction") || has("lock time-out") {
                ErrorClass::LockTimeout
            } else if has("violation of PRIMARY or UNIQUE KEY") {
                ErrorClass::UniqueViolation
            } else if has("Table unknown") {
                ErrorClass::UndefinedTable
            } else if has("user name and password are not defined") || has("login") && has("failed")
            {
                ErrorClass::AuthFailed
            } else if has("connection shutdown")
                || has("Error reading data from the connection")
                || has("Error writing data to the connection")
            {
                ErrorClass::ConnectionLost
            } else {
                ErrorClass::Other(code.to_string())
            };
            DbError::new(
                class,
                format!("{} (SQLCODE {code})", msg.replace('\n', ": ")),
            )
        }
        FbError::Io(io) => DbError::new(ErrorClass::link(connecting), io.to_string()),
        FbError::Other(msg) => {
            let class = if msg.contains("user name and password") {
                ErrorClass::AuthFailed
            } else if DESYNC.iter().any(|d| msg.contains(d)) {
                // The client no longer knows where it is in the protocol: start afresh.
                ErrorClass::ConnectionLost
            } else if msg.contains("Connection closed by the server") {
                // The pure client's words for a socket the server closed (an attachment killed).
                ErrorClass::link(connecting)
            } else {
                ErrorClass::Other("client".into())
            };
            DbError::new(class, msg.replace('\n', ": "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_socket_is_found_by_its_local_address_and_shares_its_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("addr").port();
        let client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let _other = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (_server, _) = listener.accept().expect("accept");
        let local = client.local_addr().expect("local");
        let found = own_socket(local, port).expect("the client's socket");
        assert_eq!(found.local_addr().ok(), Some(local));
        // A handle on the same socket: a deadline set through it holds the client's reads.
        found
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("deadline");
        let mut buf = [0u8; 1];
        let e = std::io::Read::read(&mut &client, &mut buf).expect_err("no data comes");
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
        // And its shutdown ends them at once.
        found.shutdown(std::net::Shutdown::Both).expect("shutdown");
        assert_eq!(std::io::Read::read(&mut &client, &mut buf).expect("eof"), 0);
        // Another peer port, or no such local address: none.
        assert!(own_socket(local, port.wrapping_add(1)).is_none());
        let nowhere: SocketAddr = "127.0.0.1:1".parse().expect("addr");
        assert!(own_socket(nowhere, port).is_none());
    }

    #[test]
    fn set_transaction_sets_the_isolation() {
        let level = |s: &str| set_transaction(s).unwrap();
        assert_eq!(level("SELECT 1 FROM RDB$DATABASE"), None);
        assert_eq!(
            level("set transaction isolation level serializable;"),
            Some(TrIsolationLevel::Consistency)
        );
        assert_eq!(
            level("SET TRANSACTION ISOLATION LEVEL SNAPSHOT"),
            Some(TrIsolationLevel::Concurrency)
        );
        assert_eq!(
            level("SET TRANSACTION READ WRITE WAIT ISOLATION LEVEL READ COMMITTED"),
            Some(TrIsolationLevel::ReadCommited(
                TrRecordVersion::RecordVersion
            ))
        );
        assert!(set_transaction("SET TRANSACTION ISOLATION LEVEL DIRTY").is_err());
    }

    #[test]
    fn a_loading_block_takes_each_value_as_a_parameter_typed_as_its_column() {
        assert_eq!(
            insert_block("t", &["a", "b"], 2),
            "EXECUTE BLOCK (p0 TYPE OF COLUMN t.a = ?, p1 TYPE OF COLUMN t.b = ?, \
             p2 TYPE OF COLUMN t.a = ?, p3 TYPE OF COLUMN t.b = ?) AS BEGIN\n\
             INSERT INTO t (a, b) VALUES (:p0, :p1);\n\
             INSERT INTO t (a, b) VALUES (:p2, :p3);\n\
             END"
        );
    }

    #[test]
    fn a_set_term_script_is_split_at_its_terminator() {
        assert_eq!(script("CREATE TABLE t (x int)"), None);
        assert_eq!(script("SELECT 1 FROM RDB$DATABASE;\nSET TERM ^ ;"), None);
        let text = "SET TERM ^ ;\nCREATE PROCEDURE p AS\nBEGIN\n  x = 1;\nEND^\n\n\
                    CREATE EXCEPTION e 'no'^\nSET TERM ; ^\nDROP PROCEDURE p;\n";
        assert_eq!(
            script(text).unwrap(),
            vec![
                "CREATE PROCEDURE p AS\nBEGIN\n  x = 1;\nEND",
                "CREATE EXCEPTION e 'no'",
                "DROP PROCEDURE p",
            ]
        );
    }

    #[test]
    fn an_attachment_is_its_busiest_statement() {
        use activity::WaitClass;
        // attachment, statement state, lock timeout, transaction's waits, statement's waits
        let row = |state: Option<i64>, timeout: i64, tr: i64, st: i64| {
            let int = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
            vec![
                Value::Int(7),
                int(state),
                Value::Int(timeout),
                Value::Int(tr),
                int(Some(st)),
            ]
        };
        let class =
            |rows: &[Vec<Value>]| attachment_activity(&rows.iter().collect::<Vec<_>>()).class;
        assert_eq!(class(&[row(Some(1), -1, 1, 1)]), WaitClass::Lock);
        // A NO WAIT transaction never waits; a statement that never waited runs.
        assert_eq!(class(&[row(Some(1), 0, 1, 1)]), WaitClass::Running);
        assert_eq!(class(&[row(Some(1), -1, 1, 0)]), WaitClass::Running);
        assert_eq!(class(&[row(Some(1), -1, 0, 3)]), WaitClass::Running);
        // A stalled cursor, or no statement: the client's turn.
        assert_eq!(class(&[row(Some(2), -1, 1, 1)]), WaitClass::Client);
        assert_eq!(class(&[row(None, -1, 0, 0)]), WaitClass::Client);
        // The busiest of several statements stands for the attachment.
        assert_eq!(
            class(&[row(Some(2), -1, 0, 0), row(Some(1), -1, 0, 0)]),
            WaitClass::Running
        );
        assert_eq!(
            class(&[row(Some(1), -1, 2, 0), row(Some(1), -1, 2, 1)]),
            WaitClass::Lock
        );
    }
}
