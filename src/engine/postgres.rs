//! PostgreSQL over its wire protocol (the `postgres` crate): sessions in simple or prepared
//! protocol, COPY loading, SQLSTATE classification, and the settings that decide performance.

use std::io::Write;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, SimpleQueryMessage, Statement};

use super::{
    DbError, DbResult, Engine, EngineEntry, EngineOptions, ErrorClass, LoadProgress, Protocol,
    RowSource, ServerInfo, Session, StmtId, Value, quote_standard, render_literals,
    split_placeholders,
};
use crate::{Error, dsn::Dsn};

pub const ENTRY: EngineEntry = EngineEntry {
    name: "postgres",
    schemes: &["postgres", "postgresql"],
    about: "PostgreSQL over its wire protocol; COPY for loading",
    open,
};

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
    config: postgres::Config,
    address: String,
    user: String,
    protocol: Protocol,
}

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
    if opts.table_engine.is_some() {
        return Err(Error::Usage(
            "--table-engine applies to mysql:// only".into(),
        ));
    }
    if let Some((k, _)) = dsn.params.iter().find(|(k, _)| k != "application_name") {
        return Err(Error::Usage(format!(
            "unknown parameter '{k}' in --dsn {dsn}: postgres accepts application_name"
        )));
    }
    let user = dsn
        .user
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "postgres".into());
    let mut config = postgres::Config::new();
    config
        .host(dsn.host.as_deref().unwrap_or("localhost"))
        .port(dsn.port.unwrap_or(5432))
        .user(&user)
        .dbname(if dsn.database.is_empty() {
            &user
        } else {
            &dsn.database
        })
        .application_name(dsn.param("application_name").unwrap_or("dbduel"))
        .connect_timeout(Duration::from_secs(10));
    if let Some(pw) = dsn.password() {
        config.password(pw);
    }
    Ok(Box::new(Postgres {
        config,
        address: dsn.address(5432),
        user,
        protocol,
    }))
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
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let client = self.config.connect(NoTls).map_err(|e| {
            let mut err = classify(&e, true);
            err.message = match err.class {
                ErrorClass::Unreachable => format!(
                    "cannot reach PostgreSQL at {}: {}",
                    self.address, err.message
                ),
                ErrorClass::AuthFailed => {
                    format!("PostgreSQL refused user '{}': {}", self.user, err.message)
                }
                _ => format!(
                    "cannot connect to PostgreSQL at {}: {}",
                    self.address, err.message
                ),
            };
            err
        })?;
        Ok(Box::new(PgSession {
            client,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            tx: None,
        }))
    }
    fn table_options(&self, fillfactor: Option<u32>) -> String {
        fillfactor
            .map(|f| format!(" WITH (fillfactor={f})"))
            .unwrap_or_default()
    }
}

enum PgStmt {
    Prepared(Statement),
    Text(Vec<String>),
}

struct PgSession {
    client: Client,
    protocol: Protocol,
    stmts: Vec<PgStmt>,
    sql: String,
    /// BEGIN and END, prepared once in the prepared protocol (as pgbench -M prepared does).
    tx: Option<(Statement, Statement)>,
}

/// A parameter converted to whatever type the server inferred for its placeholder.
#[derive(Debug)]
struct PgParam<'a>(&'a Value);

impl ToSql for PgParam<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(v), &Type::INT2) => i16::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Value::Int(v), &Type::INT8) => v.to_sql(ty, out),
            (Value::Int(v), &Type::FLOAT8) => (*v as f64).to_sql(ty, out),
            (Value::Float(v), &Type::FLOAT4) => (*v as f32).to_sql(ty, out),
            (Value::Float(v), &Type::FLOAT8) => v.to_sql(ty, out),
            (Value::Text(s), _) => s.as_str().to_sql(&Type::TEXT, out),
            (v, _) => v.to_string().as_str().to_sql(&Type::TEXT, out),
        }
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    to_sql_checked!();
}

impl PgSession {
    fn run_text(&mut self) -> DbResult<Vec<SimpleQueryMessage>> {
        self.client
            .simple_query(&self.sql)
            .map_err(|e| classify(&e, false))
    }

    fn transaction_statements(&mut self) -> DbResult<&(Statement, Statement)> {
        if self.tx.is_none() {
            let begin = self
                .client
                .prepare("BEGIN")
                .map_err(|e| classify(&e, false))?;
            let end = self
                .client
                .prepare("END")
                .map_err(|e| classify(&e, false))?;
            self.tx = Some((begin, end));
        }
        Ok(self.tx.as_ref().expect("just prepared"))
    }

    fn control(&mut self, sql: &str, pick_end: bool) -> DbResult<()> {
        if self.protocol == Protocol::Prepared && sql != "ROLLBACK" {
            let (begin, end) = self.transaction_statements()?.clone();
            let stmt = if pick_end { end } else { begin };
            return self
                .client
                .execute(&stmt, &[])
                .map(drop)
                .map_err(|e| classify(&e, false));
        }
        self.client
            .batch_execute(sql)
            .map_err(|e| classify(&e, false))
    }
}

impl Session for PgSession {
    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        let parts = split_placeholders(sql);
        let stmt = match self.protocol {
            Protocol::Prepared => {
                let numbered = number_placeholders(&parts);
                PgStmt::Prepared(
                    self.client
                        .prepare(&numbered)
                        .map_err(|e| classify(&e, false))?,
                )
            }
            Protocol::Simple => PgStmt::Text(parts.iter().map(|p| p.to_string()).collect()),
        };
        self.stmts.push(stmt);
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn exec(&mut self, id: StmtId, params: &[Value]) -> DbResult<u64> {
        match &self.stmts[id.0] {
            PgStmt::Prepared(stmt) => {
                let rows = self.client.query_raw(stmt, params.iter().map(PgParam));
                let mut rows = rows.map_err(|e| classify(&e, false))?;
                let mut n = 0;
                while rows.next().map_err(|e| classify(&e, false))?.is_some() {
                    n += 1;
                }
                Ok(rows.rows_affected().unwrap_or(n))
            }
            PgStmt::Text(parts) => {
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                render_literals(&parts, params, &mut self.sql, quote_standard);
                let msgs = self.run_text()?;
                Ok(msgs
                    .iter()
                    .filter_map(|m| match m {
                        SimpleQueryMessage::CommandComplete(n) => Some(*n),
                        _ => None,
                    })
                    .last()
                    .unwrap_or(0))
            }
        }
    }

    fn query(&mut self, id: StmtId, params: &[Value]) -> DbResult<Vec<Vec<Value>>> {
        match &self.stmts[id.0] {
            PgStmt::Prepared(stmt) => {
                let rows = self.client.query_raw(stmt, params.iter().map(PgParam));
                let rows: Vec<postgres::Row> = rows
                    .and_then(|r| r.collect())
                    .map_err(|e| classify(&e, false))?;
                Ok(rows.iter().map(row_values).collect())
            }
            PgStmt::Text(parts) => {
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                render_literals(&parts, params, &mut self.sql, quote_standard);
                Ok(text_rows(self.run_text()?))
            }
        }
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.client
            .batch_execute(sql)
            .map_err(|e| classify(&e, false))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        sql.clone_into(&mut self.sql);
        Ok(text_rows(self.run_text()?))
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        self.control("BEGIN", false)
    }
    fn commit(&mut self) -> DbResult<()> {
        self.control("END", true)
    }
    fn rollback(&mut self) -> DbResult<()> {
        self.control("ROLLBACK", false)
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        // One transaction that truncates first, so COPY FREEZE can skip later hint-bit work.
        self.batch(&format!("BEGIN; TRUNCATE {table}"))?;
        let copy = format!(
            "COPY {table} ({}) FROM STDIN WITH (FREEZE ON)",
            columns.join(", ")
        );
        let mut writer = self
            .client
            .copy_in(&copy)
            .map_err(|e| classify(&e, false))?;
        let (mut buf, mut row, mut n, mut pending) =
            (Vec::with_capacity(1 << 17), Vec::new(), 0u64, 0u64);
        let io = |e: std::io::Error| {
            DbError::new(
                ErrorClass::ConnectionLost,
                format!("COPY into {table} failed: {e}"),
            )
        };
        while rows.next_row(&mut row) {
            copy_text_row(&row, &mut buf);
            n += 1;
            pending += 1;
            if buf.len() >= 1 << 16 {
                writer.write_all(&buf).map_err(io)?;
                buf.clear();
                if !progress(std::mem::take(&mut pending)) {
                    drop(writer);
                    let _ = self.client.batch_execute("ROLLBACK");
                    return Err(DbError::new(ErrorClass::Interrupted, "loading interrupted"));
                }
            }
        }
        writer.write_all(&buf).map_err(io)?;
        writer.finish().map_err(|e| classify(&e, false))?;
        progress(pending);
        self.batch("COMMIT")?;
        Ok(n)
    }

    fn server_info(&mut self) -> DbResult<ServerInfo> {
        let version = first_text(self.query_text("SHOW server_version")?);
        let list = SETTINGS
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(",");
        let rows = self.query_text(&format!(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN ({list})"
        ))?;
        let settings = rows
            .into_iter()
            .map(|r| (r[0].to_string(), r[1].to_string()))
            .collect();
        Ok(ServerInfo { version, settings })
    }

    fn database_size(&mut self) -> DbResult<u64> {
        let rows = self.query_text("SELECT pg_database_size(current_database())")?;
        Ok(rows.first().and_then(|r| r[0].as_i64()).unwrap_or(0) as u64)
    }
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
                let _ = write!(buf, "{x:?}");
            }
            Value::Text(s) => {
                for b in s.bytes() {
                    match b {
                        b'\\' => buf.extend_from_slice(b"\\\\"),
                        b'\t' => buf.extend_from_slice(b"\\t"),
                        b'\n' => buf.extend_from_slice(b"\\n"),
                        b'\r' => buf.extend_from_slice(b"\\r"),
                        _ => buf.push(b),
                    }
                }
            }
        }
    }
    buf.push(b'\n');
}

fn row_values(row: &postgres::Row) -> Vec<Value> {
    (0..row.len())
        .map(|i| {
            let ty = row.columns()[i].type_();
            let got = match *ty {
                Type::INT2 => row
                    .try_get::<_, Option<i16>>(i)
                    .map(|v| v.map(|x| Value::Int(x.into()))),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)
                    .map(|v| v.map(|x| Value::Int(x.into()))),
                Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
                Type::FLOAT4 => row
                    .try_get::<_, Option<f32>>(i)
                    .map(|v| v.map(|x| Value::Float(x.into()))),
                Type::FLOAT8 => row
                    .try_get::<_, Option<f64>>(i)
                    .map(|v| v.map(Value::Float)),
                Type::BOOL => row
                    .try_get::<_, Option<bool>>(i)
                    .map(|v| v.map(|x| Value::Int(x.into()))),
                _ => row
                    .try_get::<_, Option<String>>(i)
                    .map(|v| v.map(Value::Text)),
            };
            got.ok().flatten().unwrap_or(Value::Null)
        })
        .collect()
}

fn text_rows(msgs: Vec<SimpleQueryMessage>) -> Vec<Vec<Value>> {
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| {
                        row.get(i)
                            .map(|s| Value::Text(s.to_string()))
                            .unwrap_or(Value::Null)
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

fn first_text(rows: Vec<Vec<Value>>) -> String {
    rows.first()
        .and_then(|r| r.first())
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// Map an error to its class by SQLSTATE; I/O errors mean the server is gone.
fn classify(e: &postgres::Error, connecting: bool) -> DbError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let class = match code {
            "40001" => ErrorClass::Serialization,
            "40P01" => ErrorClass::Deadlock,
            "55P03" => ErrorClass::LockTimeout,
            "28P01" | "28000" => ErrorClass::AuthFailed,
            "42P01" => ErrorClass::UndefinedTable,
            "57P01" | "57P02" | "57P03" => ErrorClass::ConnectionLost,
            other => ErrorClass::Other(other.to_string()),
        };
        return DbError::new(class, format!("{} (SQLSTATE {code})", db.message()));
    }
    let text = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_else(|| e.to_string());
    let class = if text.contains("password") {
        ErrorClass::AuthFailed
    } else if connecting {
        ErrorClass::Unreachable
    } else {
        ErrorClass::ConnectionLost
    };
    DbError::new(class, text)
}
