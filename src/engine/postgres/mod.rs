//! PostgreSQL over its wire protocol (a lean blocking connection, see wire.rs): sessions in simple
//! or prepared protocol, COPY FREEZE loading, SQLSTATE classification, the login's parameters from
//! PG* variables and the password file (`login.rs`), and the settings that decide performance; the
//! server's counters in `stats.rs`.

use std::time::Duration;

use std::path::PathBuf;
use std::sync::Arc;

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
    connect_error, quote_standard, render_literals, split_placeholders,
};
use crate::dsn::Dsn;
use crate::error::Error;
use std::collections::BTreeMap;
use wire::{ChannelBinding, Conn, ConnectParams, Output, PgError, Prepared};

pub const ENTRY: EngineEntry = EngineEntry {
    name: "postgres",
    schemes: &["postgres", "postgresql"],
    about: "PostgreSQL over its wire protocol; COPY for loading; host may be a socket directory",
    open,
    file: false,
    durability,
};

/// fsync and full_page_writes off may corrupt; synchronous_commit off loses the last commits.
fn durability(settings: &BTreeMap<String, String>) -> Durability {
    let get = |k: &str| settings.get(k).map(String::as_str);
    let mut found = Vec::new();
    for (name, cost) in [
        ("fsync", "a crash of the machine may corrupt the database"),
        ("full_page_writes", "a power loss may leave torn pages"),
    ] {
        match get(name) {
            None => found.push(durability::unread(name)),
            Some("off") => found.push((Level::Unsafe, format!("{name}=off: {cost}"))),
            Some(_) => {}
        }
    }
    match get("synchronous_commit") {
        None => found.push(durability::unread("synchronous_commit")),
        Some("off") => found.push((
            Level::NotDurable,
            "synchronous_commit=off: a crash loses the last commits".into(),
        )),
        Some(_) => {}
    }
    // Read with the settings when the database has any (pgbench -i --unlogged-tables).
    if let Some(n) = get(UNLOGGED).filter(|n| *n != "0") {
        found.push((
            Level::Unsafe,
            format!("{n} unlogged tables in the database: a crash empties them (no WAL)"),
        ));
    }
    Durability::of(found)
}

/// The pseudo-setting that carries the database's unlogged tables, when it has some.
const UNLOGGED: &str = "unlogged_tables";

/// Settings that decide performance, read back from the server with every result.
const SETTINGS: &[&str] = &[
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_buffers",
    "wal_level",
    "wal_compression",
    "max_wal_size",
    "min_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "commit_delay",
    "autovacuum",
    "max_connections",
    "default_transaction_isolation",
    "random_page_cost",
    "huge_pages",
    "jit",
    "data_checksums",
    "bgwriter_delay",
];

struct Postgres {
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    database: String,
    application_name: String,
    /// libpq's `options` (PGOPTIONS), sent at startup.
    options: Option<String>,
    protocol: Protocol,
    tls: Tls,
    channel_binding: ChannelBinding,
    connect_timeout: Duration,
    statement_timeout: Option<Duration>,
    lazy_begin: bool,
}

/// DSN parameters, each with the environment variable libpq reads when the DSN leaves it out.
const PARAMS: &[(&str, &str)] = &[
    ("host", "PGHOST"),
    ("port", "PGPORT"),
    ("user", "PGUSER"),
    ("password", "PGPASSWORD"),
    ("dbname", "PGDATABASE"),
    ("application_name", "PGAPPNAME"),
    ("options", "PGOPTIONS"),
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("sslcert", "PGSSLCERT"),
    ("sslkey", "PGSSLKEY"),
    ("channel_binding", "PGCHANNELBINDING"),
    ("connect_timeout", "PGCONNECT_TIMEOUT"),
    ("passfile", "PGPASSFILE"),
];

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    opts.no_table_engine()?;
    dsn.only_params("postgres", PARAMS.iter().map(|p| p.0))?;
    let get = |key: &str| login::param(dsn, key, PARAMS);
    let user = dsn
        .user
        .clone()
        .or_else(|| get("user"))
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "postgres".into());
    let host = get("host")
        .or(dsn.host.clone())
        .unwrap_or_else(|| "localhost".into());
    let port = match (dsn.port, get("port")) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().map_err(|_| {
            Error::Usage(format!("port '{p}' for --dsn {dsn} is not a port number"))
        })?,
        (None, None) => 5432,
    };
    let database = Some(dsn.database.clone())
        .filter(|d| !d.is_empty())
        .or_else(|| get("dbname"))
        .unwrap_or_else(|| user.clone());
    let password = dsn
        .password()
        .map(str::to_string)
        .or_else(|| get("password"))
        .or_else(|| {
            let file = get("passfile")
                .map(PathBuf::from)
                .or_else(|| login::home(".pgpass"))?;
            let socket_host = if host.starts_with('/') {
                "localhost"
            } else {
                &host
            };
            login::pgpass(&file, socket_host, port, &database, &user)
        });
    let usage = |e: String| Error::Usage(format!("--dsn {dsn}: {e}"));
    Ok(Box::new(Postgres {
        tls: Tls::new(&tls_options(&get)?).map_err(usage)?,
        channel_binding: match get("channel_binding").as_deref().unwrap_or("prefer") {
            "disable" => ChannelBinding::Disable,
            "prefer" => ChannelBinding::Prefer,
            "require" => ChannelBinding::Require,
            other => {
                return Err(usage(format!(
                    "channel_binding '{other}': use disable, prefer or require"
                )));
            }
        },
        connect_timeout: login::connect_timeout(get("connect_timeout")).map_err(usage)?,
        statement_timeout: opts.statement_timeout,
        lazy_begin: opts.lazy_begin,
        host,
        port,
        database,
        user,
        password,
        application_name: get("application_name").unwrap_or_else(|| "dbduel".into()),
        options: get("options").filter(|o| !o.trim().is_empty()),
        protocol,
    }))
}

/// libpq's sslmode and its files: ~/.postgresql/root.crt, postgresql.crt and postgresql.key
/// when the DSN names none; `require` with a CA file verifies the chain as verify-ca does
/// (libpq's rule); `sslrootcert=system` takes the system's roots and needs verify-full.
fn tls_options(get: &dyn Fn(&str) -> Option<String>) -> Result<TlsOptions, Error> {
    let mode = match get("sslmode").as_deref().unwrap_or("prefer") {
        "disable" => Mode::Disable,
        "allow" => Mode::Allow,
        "prefer" => Mode::Prefer,
        "require" => Mode::Require,
        "verify-ca" => Mode::VerifyCa,
        "verify-full" => Mode::VerifyFull,
        other => {
            return Err(Error::Usage(format!(
                "sslmode '{other}': use disable, allow, prefer, require, verify-ca or verify-full"
            )));
        }
    };
    let roots = match get("sslrootcert") {
        Some(s) if s == "system" => {
            if mode != Mode::VerifyFull && mode != Mode::Disable {
                return Err(Error::Usage(format!(
                    "sslmode '{}' is too weak for sslrootcert=system: use sslmode=verify-full",
                    get("sslmode").unwrap_or_else(|| "prefer".into())
                )));
            }
            Some(Roots::System)
        }
        Some(file) => Some(Roots::File(file.into())),
        None => login::home(".postgresql/root.crt")
            .filter(|p| p.exists())
            .map(Roots::File),
    };
    let mode = match (mode, &roots) {
        (Mode::Require, Some(Roots::File(_))) => Mode::VerifyCa,
        _ => mode,
    };
    let client = match (get("sslcert"), get("sslkey")) {
        (Some(c), Some(k)) => Some((c.into(), k.into())),
        (Some(c), None) => Some((
            PathBuf::from(&c),
            login::home(".postgresql/postgresql.key").unwrap_or_default(),
        )),
        (None, _) => login::home(".postgresql/postgresql.crt")
            .filter(|p| p.exists())
            .zip(login::home(".postgresql/postgresql.key").filter(|p| p.exists())),
    };
    Ok(TlsOptions {
        mode,
        roots,
        client,
    })
}

impl Engine for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn dialect(&self) -> &'static str {
        "postgres"
    }
    fn embedded(&self) -> bool {
        false
    }
    fn multiplexed(&self) -> bool {
        true
    }
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let params = ConnectParams {
            host: &self.host,
            port: self.port,
            user: &self.user,
            password: self.password.as_deref(),
            database: &self.database,
            application_name: &self.application_name,
            options: self.options.as_deref(),
            timeout: self.connect_timeout,
            tls: &self.tls,
            channel_binding: self.channel_binding,
        };
        // A host starting with / is a socket directory, as libpq takes it.
        let address = if self.host.starts_with('/') {
            format!("socket {}/.s.PGSQL.{}", self.host, self.port)
        } else {
            crate::dsn::host_port(&self.host, self.port)
        };
        let mut conn = Conn::connect(&params)
            .map_err(|e| match e {
                PgError::Io(io) => PgError::Io(login::explain_timeout(io, self.connect_timeout)),
                e => e,
            })
            .map_err(|e| connect_error(classify(e, true), "PostgreSQL", &address, &self.user))?;
        if let Some(t) = self.statement_timeout {
            conn.query(&timeout_setting(Some(t)), &mut Output::new(None))
                .map_err(|e| classify(e, true))?;
        }
        Ok(Box::new(PgSession {
            conn,
            host: self.host.clone(),
            port: self.port,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            tx: None,
            rollback: None,
            pipeline: None,
            counters_sql: None,
            activity: ActivityQuery::Unprepared,
            lazy_begin: self.lazy_begin,
            begin_held: false,
        }))
    }
    fn table_options(&self, fillfactor: Option<u32>) -> String {
        fillfactor
            .map(|f| format!(" WITH (fillfactor={f})"))
            .unwrap_or_default()
    }
}

enum PgStmt {
    Prepared(Prepared),
    /// The extended protocol's unnamed statement, its placeholders numbered: parsed each time.
    Unnamed(String),
    Text(Vec<String>),
}

struct PgSession {
    conn: Conn,
    /// Where the server is, for a CancelRequest.
    host: String,
    port: u16,
    protocol: Protocol,
    stmts: Vec<PgStmt>,
    sql: String,
    /// BEGIN and END, prepared once in the prepared protocol (as pgbench -M prepared does).
    tx: Option<(Prepared, Prepared)>,
    /// ROLLBACK prepared for a pipeline (sent as text elsewhere).
    rollback: Option<Prepared>,
    /// In pipeline mode: the Syncs queued so far (`\syncpipeline`).
    pipeline: Option<usize>,
    /// The observer's counter query for this server's version, built on first use.
    counters_sql: Option<String>,
    /// How the wait sampler's query is sent (`Session::activity`).
    activity: ActivityQuery,
    /// `--lazy-begin` (`EngineOptions::lazy_begin`).
    lazy_begin: bool,
    /// A lazy BEGIN not sent yet: it goes with the next statement.
    begin_held: bool,
}

/// How the wait sampler's query is sent on a session: prepared on the server at its first
/// sample (`PREPARE`, then `EXECUTE` at each: the view's parsing, rewriting and planning were
/// three quarters of a sample's time), or as text where the server would not keep it (a pooler
/// that hands the session's statements to other connections).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ActivityQuery {
    Unprepared,
    Prepared,
    Text,
}

/// The wait sampler's query: the run's backends and, for a lock waiter, its first holder.
const ACTIVITY_SQL: &str = "WITH a AS (SELECT pid, state, wait_event_type, wait_event, \
     backend_type = 'client backend' AND state <> 'idle' \
     AND application_name = current_setting('application_name') AS ours, \
     CASE WHEN wait_event_type = 'Lock' THEN (pg_blocking_pids(pid))[1] END AS holder \
     FROM pg_stat_activity \
     WHERE datname = current_database() AND pid <> pg_backend_pid()) \
     SELECT pid, state, wait_event_type, wait_event, holder, ours FROM a \
     WHERE ours OR pid IN (SELECT holder FROM a)";

/// The name the sampler's query is prepared under.
const ACTIVITY_NAME: &str = "dbduel_activity";

impl PgSession {
    /// The sampler's query's rows, prepared on the server once (`ActivityQuery`); a session on
    /// which preparing or executing it fails sends it as text from then on.
    fn activity_rows(&mut self) -> DbResult<Vec<Vec<Value>>> {
        if self.activity == ActivityQuery::Unprepared {
            let prepared = self.batch(&format!("PREPARE {ACTIVITY_NAME} AS {ACTIVITY_SQL}"));
            self.activity = match prepared {
                Ok(()) => ActivityQuery::Prepared,
                Err(_) => ActivityQuery::Text,
            };
        }
        if self.activity == ActivityQuery::Prepared {
            match self.query_text(&format!("EXECUTE {ACTIVITY_NAME}")) {
                // The server no longer has it (SQLSTATE 26000: a pooler's other connection).
                Err(e) if e.class == ErrorClass::Other("26000".into()) => {
                    self.activity = ActivityQuery::Text;
                }
                // Its rows, or what a stalled or lost server said, as the text query would.
                done => return done,
            }
        }
        self.query_text(ACTIVITY_SQL)
    }

    fn text(&mut self, sql: &str, rows: Option<&mut Vec<Vec<Value>>>) -> DbResult<()> {
        // Text ends a pipeline left open (a script that stopped inside one): its replies
        // are read and dropped first.
        if self.pipeline.is_some() {
            let _ = self.end_pipeline();
        }
        // A lazy BEGIN goes in the same Query: its explicit BEGIN keeps the transaction open
        // after it.
        let lazy;
        let sql = if std::mem::take(&mut self.begin_held) {
            lazy = format!("BEGIN;{sql}");
            &lazy
        } else {
            sql
        };
        self.conn
            .query(sql, &mut Output::new(rows))
            .map_err(|e| classify(e, false))
    }

    fn control(&mut self, sql: &str, end: bool) -> DbResult<()> {
        if self.protocol == Protocol::Extended {
            // pgbench -M extended sends them as any statement, unnamed.
            let done = if self.pipeline.is_some() {
                self.conn.queue_unnamed(sql, &[])
            } else {
                self.conn.execute_unnamed(sql, &[], &mut Output::new(None))
            };
            return done.map_err(|e| classify(e, false));
        }
        if self.pipeline.is_some() {
            let stmt = match (sql, &self.tx, &self.rollback) {
                ("ROLLBACK", _, Some(rollback)) => rollback,
                (_, Some((begin, commit)), _) => {
                    if end {
                        commit
                    } else {
                        begin
                    }
                }
                _ => unreachable!("start_pipeline prepares them"),
            };
            return self.conn.queue(stmt, &[]).map_err(|e| classify(e, false));
        }
        if self.protocol == Protocol::Simple || sql == "ROLLBACK" {
            return self.text(sql, None);
        }
        self.prepare_tx()?;
        let (begin, commit) = self.tx.as_ref().expect("prepared above");
        let stmt = if end { commit } else { begin };
        self.conn
            .execute(stmt, &[], &mut Output::new(None))
            .map_err(|e| classify(e, false))
    }

    /// A lazy BEGIN held back, sent now as a round trip of its own: before a load.
    fn send_held_begin(&mut self) -> DbResult<()> {
        if std::mem::take(&mut self.begin_held) {
            self.control("BEGIN", false)?;
        }
        Ok(())
    }

    /// A lazy BEGIN held back, queued ahead of the statement about to be sent, under its Sync
    /// (as pgJDBC sends it): the server runs both and answers once.
    fn queue_held_begin(&mut self) -> DbResult<()> {
        if !std::mem::take(&mut self.begin_held) {
            return Ok(());
        }
        let queued = match self.protocol {
            Protocol::Prepared => {
                self.prepare_tx()?;
                let (begin, _) = self.tx.as_ref().expect("prepared above");
                self.conn.queue(begin, &[])
            }
            Protocol::Extended => self.conn.queue_unnamed("BEGIN", &[]),
            Protocol::Simple => unreachable!("the simple protocol's BEGIN goes in the text"),
        };
        queued.map_err(|e| classify(e, false))
    }

    /// BEGIN and END prepared, once.
    fn prepare_tx(&mut self) -> DbResult<()> {
        if self.tx.is_none() {
            let begin = self
                .conn
                .prepare("dbduel_begin", "BEGIN")
                .map_err(|e| classify(e, false))?;
            let commit = self
                .conn
                .prepare("dbduel_end", "END")
                .map_err(|e| classify(e, false))?;
            self.tx = Some((begin, commit));
        }
        Ok(())
    }
}

/// Ends a PostgreSQL session's statement from another thread: a CancelRequest with the
/// backend's key, then, if need be, the socket shut down.
struct PgCancel {
    host: String,
    port: u16,
    key: Option<(i32, i32)>,
    socket: Option<SocketHandle>,
}

impl Cancel for PgCancel {
    fn cancel(&self) -> Result<(), String> {
        let key = self.key.ok_or("the server sent no cancel key")?;
        Conn::cancel(&self.host, self.port, key, Duration::from_secs(2)).map_err(|e| e.to_string())
    }
    fn abandon(&self) {
        if let Some(s) = &self.socket {
            s.shutdown();
        }
    }
}

impl Session for PgSession {
    fn canceller(&self) -> Option<Arc<dyn Cancel>> {
        Some(Arc::new(PgCancel {
            host: self.host.clone(),
            port: self.port,
            key: self.conn.backend_key,
            socket: self.conn.socket_handle(),
        }))
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.conn.set_timeout(timeout);
    }

    fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.conn.notices)
    }

    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        if self.pipeline.is_some() && self.protocol == Protocol::Prepared {
            return Err(DbError::new(
                ErrorClass::Other("pipeline".into()),
                "cannot prepare a statement inside a pipeline: prepare it before \\startpipeline",
            ));
        }
        let parts = split_placeholders(sql);
        let stmt = match self.protocol {
            Protocol::Prepared => {
                let name = format!("dbduel_{}", self.stmts.len());
                PgStmt::Prepared(
                    self.conn
                        .prepare(&name, &number_placeholders(&parts))
                        .map_err(|e| classify(e, false))?,
                )
            }
            Protocol::Extended => PgStmt::Unnamed(number_placeholders(&parts)),
            Protocol::Simple => PgStmt::Text(parts.iter().map(|p| p.to_string()).collect()),
        };
        self.stmts.push(stmt);
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn execute(
        &mut self,
        id: StmtId,
        params: &[Value],
        rows: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        if self.pipeline.is_some() {
            let queued = match &self.stmts[id.0] {
                PgStmt::Prepared(stmt) => self.conn.queue(stmt, params),
                PgStmt::Unnamed(sql) => self.conn.queue_unnamed(sql, params),
                PgStmt::Text(_) => unreachable!("start_pipeline refuses the simple protocol"),
            };
            queued.map_err(|e| classify(e, false))?;
            return Ok(0);
        }
        if self.begin_held && !matches!(self.stmts[id.0], PgStmt::Text(_)) {
            self.queue_held_begin()?;
        }
        let mut out = Output::new(rows);
        let done = match &self.stmts[id.0] {
            PgStmt::Prepared(stmt) => self.conn.execute(stmt, params, &mut out),
            PgStmt::Unnamed(sql) => self.conn.execute_unnamed(sql, params, &mut out),
            PgStmt::Text(parts) => {
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                render_literals(&parts, params, &mut self.sql, quote_standard);
                // The simple protocol's lazy BEGIN: one Query of two statements, whose
                // explicit BEGIN keeps the transaction open after it.
                if std::mem::take(&mut self.begin_held) {
                    self.sql.insert_str(0, "BEGIN;");
                }
                self.conn.query(&self.sql, &mut out)
            }
        };
        done.map_err(|e| classify(e, false))?;
        Ok(out.count)
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.text(sql, None)
    }

    fn set_statement_timeout(&mut self, limit: Option<Duration>) -> DbResult<()> {
        self.text(&timeout_setting(limit), None)
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        self.text(sql, Some(&mut rows))?;
        Ok(rows)
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        if self.lazy_begin && self.pipeline.is_none() {
            self.begin_held = true;
            return Ok(());
        }
        self.control("BEGIN", false)
    }

    fn start_pipeline(&mut self) -> DbResult<bool> {
        if self.protocol == Protocol::Simple {
            return Err(DbError::new(
                ErrorClass::Other("pipeline".into()),
                "cannot use pipeline mode with the simple query protocol",
            ));
        }
        if self.pipeline.is_some() {
            return Err(DbError::new(
                ErrorClass::Other("pipeline".into()),
                "already in pipeline mode",
            ));
        }
        // Prepared before the pipeline, as the statements of a script's pipeline are.
        if self.protocol == Protocol::Prepared {
            self.prepare_tx()?;
        }
        if self.protocol == Protocol::Prepared && self.rollback.is_none() {
            let rollback = self
                .conn
                .prepare("dbduel_rollback", "ROLLBACK")
                .map_err(|e| classify(e, false))?;
            self.rollback = Some(rollback);
        }
        self.pipeline = Some(0);
        // A lazy BEGIN before the pipeline heads its queue.
        if std::mem::take(&mut self.begin_held) {
            self.control("BEGIN", false)?;
        }
        Ok(true)
    }

    fn sync_pipeline(&mut self) -> DbResult<()> {
        let Some(syncs) = self.pipeline.as_mut() else {
            return Err(DbError::new(
                ErrorClass::Other("pipeline".into()),
                "not in pipeline mode",
            ));
        };
        *syncs += 1;
        self.conn.queue_sync();
        Ok(())
    }

    fn end_pipeline(&mut self) -> DbResult<()> {
        let Some(syncs) = self.pipeline.take() else {
            return Err(DbError::new(
                ErrorClass::Other("pipeline".into()),
                "not in pipeline mode",
            ));
        };
        self.conn.queue_sync();
        self.conn.drain(syncs + 1).map_err(|e| classify(e, false))
    }
    fn commit(&mut self) -> DbResult<()> {
        // A lazy transaction that sent no statement was never begun: nothing to end.
        if std::mem::take(&mut self.begin_held) {
            return Ok(());
        }
        self.control("END", true)
    }
    fn rollback(&mut self) -> DbResult<()> {
        if std::mem::take(&mut self.begin_held) {
            return Ok(());
        }
        self.control("ROLLBACK", false)
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        mode: Load,
    ) -> DbResult<u64> {
        self.send_held_begin()?;
        self.copy_in(table, columns, rows, progress, mode == Load::Replace)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        let list = SETTINGS
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        let rows = self.query_text(&format!(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ({list})"
        ))?;
        let mut settings: BTreeMap<String, String> = rows
            .into_iter()
            .map(|r| (r[0].to_string(), r[1].to_string()))
            .collect();
        // A table's own durability: unlogged tables lose their rows in a crash, whatever the
        // server's settings.
        let unlogged = self.query_text(
            "SELECT count(*) FROM pg_class WHERE relpersistence = 'u' AND relkind IN ('r', 'p')",
        )?;
        if let Some(n) = unlogged
            .first()
            .and_then(|r| r[0].as_i64())
            .filter(|n| *n > 0)
        {
            settings.insert(UNLOGGED.into(), n.to_string());
        }
        let isolation = self.query_text("SHOW transaction_isolation")?;
        Ok(ServerInfo {
            version: self.conn.server_version.clone(),
            settings,
            transport: self.conn.transport.clone(),
            isolation: isolation
                .first()
                .map(|r| super::isolation_words(&r[0].to_string()))
                .unwrap_or_default(),
            table_engine: None,
        })
    }

    fn database_size(&mut self) -> DbResult<u64> {
        let rows = self.query_text("SELECT pg_database_size(current_database())")?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0) as u64)
    }

    fn counters(&mut self) -> DbResult<Counters> {
        if self.counters_sql.is_none() {
            let rows = self.query_text("SELECT current_setting('server_version_num')::int")?;
            let version = rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
            self.counters_sql = Some(counters_sql(version));
        }
        let sql = self.counters_sql.clone().expect("set above");
        let rows = self.query_text(&sql)?;
        let get = |i: usize| {
            rows.first()
                .and_then(|r| r.get(i)?.as_i64())
                .map(|v| v.max(0) as u64)
        };
        Ok(Counters {
            checkpoints: get(0),
            autovacuums: get(1),
            database_size_bytes: get(2),
        })
    }

    /// The counters of this database and the cluster, in one query (postgres/stats.rs).
    fn stats(&mut self) -> DbResult<Option<super::stats::Reading>> {
        let version = self.conn.server_version.clone();
        stats::read(self, &version)
    }

    /// The run's backends: this database's client backends under dbduel's application name,
    /// this session's own left out, those idle between transactions left on the server; and,
    /// for those waiting on a lock, who holds it first (`pg_blocking_pids`, asked for the lock
    /// waiters only: it takes the lock manager's partition locks) and what that one was doing,
    /// a session of the run or not. All in one query, so at one instant: a holder that waits on
    /// a lock too is followed to the head of the queue.
    fn activity(&mut self) -> DbResult<Option<Vec<Activity>>> {
        let rows = self.activity_rows()?;
        let text = |v: &Value| match v {
            Value::Null => None,
            v => Some(v.to_string()),
        };
        let row = |pid: i64| rows.iter().find(|r| r[0].as_i64() == Some(pid));
        // A holder outside the database is not followed: its row is not there to describe.
        let first = |pid: &i64| {
            row(*pid)
                .and_then(|r| r[4].as_i64())
                .filter(|h| row(*h).is_some())
        };
        let described = |pid: i64| {
            let r = row(pid)?;
            let state = text(&r[1]).unwrap_or_else(|| "idle".into());
            Some(activity::postgres_holder(
                &state,
                text(&r[2]).as_deref(),
                text(&r[3]).as_deref(),
            ))
        };
        let ours = |r: &&Vec<Value>| r[5].as_i64() == Some(1);
        Ok(Some(
            rows.iter()
                .filter(ours)
                .filter_map(|r| {
                    let (state, kind, event) = (text(&r[1])?, text(&r[2]), text(&r[3]));
                    let mut a = activity::postgres(&state, kind.as_deref(), event.as_deref())?;
                    let pid = r[0].as_i64()?;
                    if a.class == activity::WaitClass::Lock {
                        a.holder = first(&pid)
                            .and_then(|holder| described(activity::head_of_queue(holder, first)));
                    }
                    Some(a)
                })
                .collect(),
        ))
    }

    fn statements(&mut self) -> DbResult<super::statements::Reading> {
        statements::read(self)
    }
}

/// The observer's counters in one round trip: checkpoints of the cluster, autovacuum and
/// autoanalyze runs on this database's tables, this database's size.
fn counters_sql(version_num: i64) -> String {
    let checkpoints = match version_num {
        // 18 added num_done, the checkpoints actually performed (num_timed also counts the
        // timed ones skipped on an idle server).
        180000.. => "SELECT num_done FROM pg_stat_checkpointer",
        // 17 moved the checkpointer's counters out of pg_stat_bgwriter.
        170000.. => "SELECT num_timed + num_requested FROM pg_stat_checkpointer",
        _ => "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter",
    };
    format!(
        "SELECT ({checkpoints}), \
         (SELECT sum(autovacuum_count + autoanalyze_count) FROM pg_stat_all_tables), \
         pg_database_size(current_database())"
    )
}

fn number_placeholders(parts: &[&str]) -> String {
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        out.push_str(part);
        if i + 1 < parts.len() {
            out.push_str(&format!("${}", i + 1));
        }
    }
    out
}

/// One row in COPY's text format: tab-separated, \N for NULL, backslash escapes.
fn copy_text_row(row: &[Value], buf: &mut Vec<u8>) {
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            buf.push(b'\t');
        }
        match v {
            Value::Null => buf.extend_from_slice(b"\\N"),
            Value::Int(x) => buf.extend_from_slice(itoa::Buffer::new().format(*x).as_bytes()),
            Value::Float(x) => {
                buf.extend_from_slice(format!("{x:?}").as_bytes());
            }
            Value::Text(s) => {
                // The runs between escapes go whole (most values have none).
                let bytes = s.as_bytes();
                let mut start = 0;
                for (i, b) in bytes.iter().enumerate() {
                    let escaped: &[u8] = match b {
                        b'\\' => b"\\\\",
                        b'\t' => b"\\t",
                        b'\n' => b"\\n",
                        b'\r' => b"\\r",
                        _ => continue,
                    };
                    buf.extend_from_slice(&bytes[start..i]);
                    buf.extend_from_slice(escaped);
                    start = i + 1;
                }
                buf.extend_from_slice(&bytes[start..]);
            }
        }
    }
    buf.push(b'\n');
}

/// Map an error to its class by SQLSTATE; I/O errors mean the server is gone (or unreachable).
/// The server's own limit on each statement (0: none).
fn timeout_setting(limit: Option<Duration>) -> String {
    let ms = limit.map_or(0, |t| t.as_millis().max(1));
    format!("SET statement_timeout = {ms}")
}

fn classify(e: PgError, connecting: bool) -> DbError {
    match e {
        PgError::Db { code, message } => {
            let class = match code.as_str() {
                "40001" => ErrorClass::Serialization,
                "40P01" => ErrorClass::Deadlock,
                "55P03" => ErrorClass::LockTimeout,
                "28P01" | "28000" => ErrorClass::AuthFailed,
                "57014" => ErrorClass::StatementTimeout,
                "42P01" => ErrorClass::UndefinedTable,
                "23505" => ErrorClass::UniqueViolation,
                "57P01" | "57P02" | "57P03" => ErrorClass::ConnectionLost,
                other => ErrorClass::Other(other.to_string()),
            };
            let hint = if code == "53300" {
                "; lower --clients or raise the server's max_connections"
            } else {
                ""
            };
            DbError::new(class, format!("{message} (SQLSTATE {code}){hint}"))
        }
        PgError::Io(e) => DbError::new(ErrorClass::link(connecting), e.to_string()),
        PgError::Protocol(p) => DbError::new(ErrorClass::Other("protocol".into()), p),
        PgError::Tls(t) => DbError::new(ErrorClass::link(connecting), t),
    }
}

impl PgSession {
    /// COPY in one transaction; `replace` truncates first, so COPY FREEZE spares VACUUM the
    /// hint-bit work (FREEZE needs the truncation in the same transaction, hence not when
    /// appending, and PostgreSQL refuses it on a partitioned table, as pgbench knows).
    fn copy_in(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        replace: bool,
    ) -> DbResult<u64> {
        let partitioned = replace && {
            let kind = self.query_text(&format!(
                "SELECT relkind FROM pg_class WHERE oid = to_regclass('{}')",
                table.replace('\'', "''")
            ))?;
            kind.first().is_some_and(|r| r[0].to_string() == "p")
        };
        if replace {
            self.batch(&format!("BEGIN; TRUNCATE {table}"))?;
        } else {
            self.batch("BEGIN")?;
        }
        let copy = format!(
            "COPY {table} ({}) FROM STDIN{}",
            columns.join(", "),
            if replace && !partitioned {
                " WITH (FREEZE ON)"
            } else {
                ""
            }
        );

        let mut row = Vec::new();
        let loaded = self.conn.copy_in(&copy, |chunk| {
            let mut n = 0;
            while chunk.len() < 1 << 16 {
                if !rows.next_row(&mut row) {
                    progress(n);
                    return Ok(false);
                }
                copy_text_row(&row, chunk);
                n += 1;
            }
            if progress(n) {
                Ok(true)
            } else {
                Err(PgError::Protocol("interrupted".into()))
            }
        });
        match loaded {
            Ok(n) => {
                self.batch("COMMIT")?;
                Ok(n)
            }
            Err(PgError::Protocol(p)) if p == "interrupted" => {
                let _ = self.batch("ROLLBACK");
                Err(DbError::new(ErrorClass::Interrupted, "loading interrupted"))
            }
            Err(e) => {
                let _ = self.batch("ROLLBACK");
                Err(classify(e, false))
            }
        }
    }
}
