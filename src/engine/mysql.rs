//! MariaDB and MySQL over their wire protocol (the `mysql` crate): text or binary protocol,
//! a selectable storage engine (InnoDB, MyISAM, Aria), multi-row INSERT loading, error codes.

use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Params, Statement};

use super::{
    Counters, DbError, DbResult, Engine, EngineEntry, EngineOptions, ErrorClass, LoadProgress,
    Protocol, RowSource, ServerInfo, Session, StmtId, Value, connect_error, render_literals,
    split_placeholders,
};
use crate::{Error, dsn::Dsn};

pub const ENTRY: EngineEntry = EngineEntry {
    name: "mysql",
    schemes: &["mysql", "mariadb"],
    about: "MariaDB or MySQL; --table-engine InnoDB (default), MyISAM or Aria",
    open,
};

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

/// Prepared statements a session may hold (sysbench: 9 per table).
const STATEMENT_CACHE: usize = 16_384;

/// Rows per multi-row INSERT, and rows per transaction, when loading.
const INSERT_ROWS: usize = 2000;
const COMMIT_ROWS: u64 = 100_000;

struct MySql {
    opts: mysql::Opts,
    address: String,
    user: String,
    protocol: Protocol,
    table_engine: &'static str,
}

fn open(dsn: &Dsn, opts: &EngineOptions, protocol: Protocol) -> Result<Box<dyn Engine>, Error> {
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
    if let Some((k, _)) = dsn.params.iter().find(|(k, _)| k != "socket") {
        return Err(Error::Usage(format!(
            "unknown parameter '{k}' in --dsn {dsn}: mysql accepts socket"
        )));
    }
    let user = dsn.user.clone().unwrap_or_else(|| "root".into());
    let builder = OptsBuilder::new()
        .ip_or_hostname(Some(dsn.host.clone().unwrap_or_else(|| "localhost".into())))
        .tcp_port(dsn.port.unwrap_or(3306))
        .user(Some(user.clone()))
        .pass(dsn.password())
        .db_name(Some(dsn.database.clone()).filter(|d| !d.is_empty()))
        .prefer_socket(false)
        .socket(dsn.param("socket"))
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        // Sessions keep their prepared statements; the driver's cache (32 by default) would
        // close the oldest behind their back (error 1243) when a workload prepares more.
        .stmt_cache_size(Some(STATEMENT_CACHE));
    Ok(Box::new(MySql {
        opts: builder.into(),
        address: dsn.address(3306),
        user,
        protocol,
        table_engine,
    }))
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
    fn connect(&self) -> DbResult<Box<dyn Session>> {
        let conn = Conn::new(self.opts.clone()).map_err(|e| {
            connect_error(
                classify(&e, true),
                "MariaDB/MySQL",
                &self.address,
                &self.user,
            )
        })?;
        Ok(Box::new(MySession {
            conn,
            protocol: self.protocol,
            stmts: Vec::new(),
            sql: String::new(),
            innodb_metrics: true,
        }))
    }
    fn table_options(&self, _fillfactor: Option<u32>) -> String {
        format!(" ENGINE={}", self.table_engine)
    }
}

enum MyStmt {
    Prepared(Statement),
    Text(Vec<String>),
}

struct MySession {
    conn: Conn,
    protocol: Protocol,
    stmts: Vec<MyStmt>,
    sql: String,
    /// Whether the observer may read information_schema.INNODB_METRICS (it needs PROCESS).
    innodb_metrics: bool,
}

fn to_mysql(v: &Value) -> mysql::Value {
    match v {
        Value::Null => mysql::Value::NULL,
        Value::Int(i) => mysql::Value::Int(*i),
        Value::Float(f) => mysql::Value::Double(*f),
        Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
    }
}

fn from_mysql(v: &mysql::Value) -> Value {
    match v {
        mysql::Value::NULL => Value::Null,
        mysql::Value::Int(i) => Value::Int(*i),
        mysql::Value::UInt(u) => Value::Int(*u as i64),
        mysql::Value::Float(f) => Value::Float((*f).into()),
        mysql::Value::Double(f) => Value::Float(*f),
        mysql::Value::Bytes(b) => Value::Text(String::from_utf8_lossy(b).into_owned()),
        other => Value::Text(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

/// MySQL string literal: quotes doubled and backslashes escaped (NO_BACKSLASH_ESCAPES off).
fn quote_mysql(s: &str, out: &mut String) {
    out.push('\'');
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

/// Drain a result: count its rows (or take the affected count), optionally keep the values.
fn drain<T: mysql::prelude::Protocol>(
    mut result: mysql::QueryResult<'_, '_, '_, T>,
    mut keep: Option<&mut Vec<Vec<Value>>>,
) -> DbResult<u64> {
    let mut n = 0;
    while let Some(set) = result.iter() {
        let affected = set.affected_rows();
        let mut rows = 0;
        for row in set {
            let row = row.map_err(|e| classify(&e, false))?;
            if let Some(keep) = keep.as_deref_mut() {
                keep.push(row.unwrap().iter().map(from_mysql).collect());
            }
            rows += 1;
        }
        n = if rows > 0 { rows } else { affected };
    }
    Ok(n)
}

impl MySession {
    /// Load rows through the bulk path; `replace` empties the table first.
    fn load_rows(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
        replace: bool,
    ) -> DbResult<u64> {
        use std::fmt::Write;
        if replace {
            self.batch(&format!("TRUNCATE TABLE {table}"))?;
        }
        let head = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
        let (mut row, mut n, mut in_stmt) = (Vec::new(), 0u64, 0usize);
        self.begin(true)?;
        self.sql.clear();
        while rows.next_row(&mut row) {
            self.sql.push_str(if in_stmt == 0 { &head } else { "," });
            self.sql.push('(');
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    self.sql.push(',');
                }
                match v {
                    Value::Null => self.sql.push_str("NULL"),
                    Value::Int(x) => self.sql.push_str(itoa::Buffer::new().format(*x)),
                    Value::Float(x) => {
                        let _ = write!(self.sql, "{x:?}");
                    }
                    Value::Text(s) => quote_mysql(s, &mut self.sql),
                }
            }
            self.sql.push(')');
            (n, in_stmt) = (n + 1, in_stmt + 1);
            if in_stmt == INSERT_ROWS {
                self.flush_insert()?;
                (in_stmt, self.sql) = (0, String::with_capacity(self.sql.capacity()));
                if n % COMMIT_ROWS == 0 {
                    self.commit()?;
                    self.begin(true)?;
                }
                if !progress(INSERT_ROWS as u64) {
                    let _ = self.rollback();
                    return Err(DbError::new(ErrorClass::Interrupted, "loading interrupted"));
                }
            }
        }
        if in_stmt > 0 {
            self.flush_insert()?;
            progress(in_stmt as u64);
        }
        self.commit()?;
        Ok(n)
    }

    fn run(
        &mut self,
        id: StmtId,
        params: &[Value],
        keep: Option<&mut Vec<Vec<Value>>>,
    ) -> DbResult<u64> {
        match &self.stmts[id.0] {
            MyStmt::Prepared(stmt) => {
                let params = Params::Positional(params.iter().map(to_mysql).collect());
                let result = self
                    .conn
                    .exec_iter(stmt, params)
                    .map_err(|e| classify(&e, false))?;
                drain(result, keep)
            }
            MyStmt::Text(parts) => {
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                render_literals(&parts, params, &mut self.sql, quote_mysql);
                let result = self
                    .conn
                    .query_iter(&self.sql)
                    .map_err(|e| classify(&e, false))?;
                drain(result, keep)
            }
        }
    }

    fn flush_insert(&mut self) -> DbResult<()> {
        self.conn
            .query_drop(&self.sql)
            .map_err(|e| classify(&e, false))
    }
}

impl Session for MySession {
    fn prepare(&mut self, sql: &str) -> DbResult<StmtId> {
        let stmt = match self.protocol {
            Protocol::Prepared => {
                MyStmt::Prepared(self.conn.prep(sql).map_err(|e| classify(&e, false))?)
            }
            Protocol::Simple => MyStmt::Text(
                split_placeholders(sql)
                    .iter()
                    .map(|p| p.to_string())
                    .collect(),
            ),
        };
        self.stmts.push(stmt);
        Ok(StmtId(self.stmts.len() - 1))
    }

    fn exec(&mut self, id: StmtId, params: &[Value]) -> DbResult<u64> {
        self.run(id, params, None)
    }

    fn query(&mut self, id: StmtId, params: &[Value]) -> DbResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        self.run(id, params, Some(&mut rows))?;
        Ok(rows)
    }

    fn batch(&mut self, sql: &str) -> DbResult<()> {
        self.conn.query_drop(sql).map_err(|e| classify(&e, false))
    }

    fn query_text(&mut self, sql: &str) -> DbResult<Vec<Vec<Value>>> {
        let mut rows = Vec::new();
        let result = self.conn.query_iter(sql).map_err(|e| classify(&e, false))?;
        drain(result, Some(&mut rows))?;
        Ok(rows)
    }

    fn begin(&mut self, _write: bool) -> DbResult<()> {
        self.batch("BEGIN")
    }
    fn commit(&mut self) -> DbResult<()> {
        self.batch("COMMIT")
    }
    fn rollback(&mut self) -> DbResult<()> {
        self.batch("ROLLBACK")
    }

    fn bulk_load(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        self.load_rows(table, columns, rows, progress, true)
    }

    fn bulk_append(
        &mut self,
        table: &str,
        columns: &[&str],
        rows: &mut dyn RowSource,
        progress: LoadProgress<'_>,
    ) -> DbResult<u64> {
        self.load_rows(table, columns, rows, progress, false)
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
        let settings = rows
            .into_iter()
            .map(|r| (r[0].to_string(), r[1].to_string()))
            .collect();
        Ok(ServerInfo { version, settings })
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
}

/// The current database's size (NULL when the session has no current database).
const MY_SIZE: &str = "IF(DATABASE() IS NULL, NULL, (SELECT COALESCE(SUM(data_length + \
     index_length), 0) FROM information_schema.tables WHERE table_schema = DATABASE()))";

/// InnoDB's checkpoint count, NULL unless the monitor is enabled (the same columns on MySQL).
const MY_CHECKPOINTS: &str = "(SELECT `COUNT` FROM information_schema.INNODB_METRICS \
     WHERE NAME = 'log_checkpoints' AND TIME_ENABLED IS NOT NULL AND TIME_DISABLED IS NULL)";

/// Map an error to its class by MariaDB/MySQL error number; I/O errors mean the server is gone.
fn classify(e: &mysql::Error, connecting: bool) -> DbError {
    match e {
        mysql::Error::MySqlError(my) => {
            let class = match my.code {
                1213 => ErrorClass::Deadlock,
                1205 => ErrorClass::LockTimeout,
                1020 => ErrorClass::Serialization,
                1045 | 1698 => ErrorClass::AuthFailed,
                1146 => ErrorClass::UndefinedTable,
                1062 => ErrorClass::UniqueViolation,
                1927 | 2006 | 2013 => ErrorClass::ConnectionLost,
                code => ErrorClass::Other(code.to_string()),
            };
            let hint = if my.code == 1040 {
                "; lower --clients or raise the server's max_connections"
            } else {
                ""
            };
            DbError::new(class, format!("{} (error {}){hint}", my.message, my.code))
        }
        other => {
            let class = if connecting {
                ErrorClass::Unreachable
            } else {
                ErrorClass::ConnectionLost
            };
            DbError::new(class, other.to_string())
        }
    }
}
