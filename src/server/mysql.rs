//! A managed MariaDB server: mariadb-install-db, mariadbd on a loopback port with the given
//! settings and files kept to its data directory, a `dbduel` superuser and root with the
//! server's password, the socket in the closed run directory; performance_schema on, with its
//! statement digests, when started with `--server-statements` (results then have the figures
//! per statement; MariaDB ships with it off).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::profile::{Facts, GIB, Knob, MIB, Tuning, config_lines, mb, pairs};
use super::{Layout, ServerKind, command, find_binary, run_logged};
use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions, Protocol};
use crate::error::Error;

pub static MARIADB: ServerKind = ServerKind {
    engine: "mysql",
    product: "MariaDB",
    package: "mariadb-server",
    account: "mysql",
    binaries,
    init,
    command: server_command,
    dsn,
    stop_signal: libc::SIGTERM,
    default_db: "dbduel",
    setup,
    fresh_db: super::fresh_db_by_sql,
    tuning: TUNING,
    statements,
};

/// `--server-statements`: performance_schema on, with its statement digests (and its wait
/// summaries, which the counters read).
fn statements(_: &Path, _: &super::Settings) -> Result<Vec<super::Setting>, String> {
    Ok(vec![
        ("performance-schema".into(), "ON".into()),
        (
            "performance-schema-consumer-statements-digest".into(),
            "ON".into(),
        ),
    ])
}

/// The profile rules: `tuned` below; `unsafe` turns durability off on top of it.
const TUNING: Tuning = Tuning {
    engine: "mysql",
    tuned,
    durability_off: &[
        ("innodb_flush_log_at_trx_commit", "0"),
        ("innodb_doublewrite", "0"),
        ("sync_binlog", "0"),
    ],
    connections: Some(("max_connections", 151)),
    space,
    config,
    recommended: None,
};

/// A my.cnf section.
fn config(knobs: &[(String, String)]) -> String {
    config_lines(
        "# my.cnf: the settings dbduel tune chose (restart the server to apply them)",
        "[mysqld]\n",
        knobs,
        |k, v| format!("{k} = {v}"),
    )
}

/// What `dbduel tune` searches on MariaDB/MySQL: the buffer pool up to 80% of RAM, the redo
/// log and its buffer, how InnoDB flushes (method, I/O capacity, neighbours), the adaptive
/// hash index, the table cache; the flush at commit and the doublewrite buffer only under
/// UNSAFE.
fn space(f: &Facts) -> Vec<Knob> {
    let ram = f.ram_bytes;
    vec![
        Knob::sizes(
            "innodb_buffer_pool_size",
            "128M",
            &[256 * MIB, 512 * MIB, GIB, ram / 4, ram / 2, ram * 4 / 5],
            ram * 4 / 5,
            "M",
        ),
        Knob::new("innodb_log_file_size", &["96M", "256M", "1024M", "2048M"]),
        Knob::new("innodb_log_buffer_size", &["16M", "64M"]),
        Knob::new("innodb_flush_method", &["O_DIRECT", "fsync", "O_DSYNC"]),
        Knob::new("innodb_io_capacity", &["200", "1000", "4000"]),
        Knob::new("innodb_flush_neighbors", &["1", "0"]),
        Knob::new("innodb_adaptive_hash_index", &["OFF", "ON"]),
        Knob::new("table_open_cache", &["2000", "4000"]),
        Knob::durability("innodb_flush_log_at_trx_commit", &["1", "2", "0"]),
        Knob::durability("innodb_doublewrite", &["1", "0"]),
    ]
}

/// MariaDB: the InnoDB buffer pool at 80% of RAM, or the dataset plus 10% when that is
/// smaller (seed 000; never under the shipped 128M); a redo log a quarter of the pool
/// (96M-1G); O_DIRECT. MariaDB 10.5+ has one buffer pool instance, so there is no
/// instances-per-core knob to set. MyISAM's key buffer and Aria's page cache get a quarter of
/// the dataset (at least 128M).
fn tuned(f: &Facts) -> Vec<(String, String)> {
    let pool = (f.dataset_bytes * 11 / 10).clamp(128 * MIB, (f.ram_bytes * 4 / 5).max(128 * MIB));
    let log = (pool / 4).clamp(96 * MIB, GIB);
    let keys = (f.dataset_bytes / 4).clamp(128 * MIB, (f.ram_bytes / 4).max(128 * MIB));
    pairs(&[
        ("innodb_buffer_pool_size", &format!("{}M", mb(pool))),
        ("innodb_log_file_size", &format!("{}M", mb(log))),
        ("innodb_log_buffer_size", "64M"),
        ("innodb_flush_method", "O_DIRECT"),
        ("key_buffer_size", &format!("{}M", mb(keys))),
        ("aria_pagecache_buffer_size", &format!("{}M", mb(keys))),
    ])
}

fn binaries(first: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    let install = find_binary(&["mariadb-install-db", "mysql_install_db"], first, &[])?;
    let server = find_binary(&["mariadbd", "mysqld"], first, &[])?;
    Some((install, server))
}

fn init(
    layout: &Layout,
    install: &Path,
    account: Option<(u32, u32)>,
    _password: Option<&str>,
) -> Result<(), Error> {
    let mut cmd = command(install, None);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", layout.data.display()));
    cmd.args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
    if account.is_some() {
        cmd.arg("--user=mysql");
    }
    run_logged(cmd, &layout.log, "mariadb-install-db")
}

fn server_command(
    layout: &Layout,
    server: &Path,
    port: u16,
    settings: &[(String, String)],
    account: Option<(u32, u32)>,
) -> Command {
    // As the service account itself, so that a parent-death signal set before exec holds.
    let mut cmd = command(server, account);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", layout.data.display()));
    cmd.args([format!("--port={port}"), "--bind-address=127.0.0.1".into()]);
    cmd.arg(format!(
        "--socket={}",
        layout.run.join("mysqld.sock").display()
    ));
    cmd.arg(format!(
        "--pid-file={}",
        layout.run.join("mysqld.pid").display()
    ));
    // LOAD DATA and SELECT ... INTO OUTFILE stay inside the data directory.
    cmd.arg(format!("--secure-file-priv={}", layout.data.display()));
    for (k, v) in settings {
        cmd.arg(format!("--{k}={v}"));
    }
    cmd
}

fn dsn(port: u16, password: Option<&str>) -> String {
    let pw = password.map(|p| format!(":{p}")).unwrap_or_default();
    format!("mysql://dbduel{pw}@127.0.0.1:{port}/")
}

/// Create the dbduel superuser through root's socket connection.
fn setup(layout: &Layout, password: Option<&str>) -> Result<(), Error> {
    let root = Dsn::parse(&format!(
        "mysql://root@localhost/?socket={}",
        layout.run.join("mysqld.sock").display()
    ))?;
    let mut s = engine::open(&root, &EngineOptions::default(), Protocol::Simple)?
        .connect()
        .map_err(|e| Error::Connect(e.message))?;
    let identified = password
        .map(|p| format!(" IDENTIFIED BY '{p}'"))
        .unwrap_or_default();
    // mariadb-install-db leaves root without a password: it gets dbduel's.
    let hosts = s
        .query_text("SELECT Host FROM mysql.user WHERE User = 'root'")
        .map_err(|e| Error::Database(e.message))?;
    let mut statements: Vec<String> = hosts
        .iter()
        .filter(|_| password.is_some())
        .map(|h| format!("ALTER USER 'root'@'{}'{identified}", h[0]))
        .collect();
    statements.extend([
        "CREATE DATABASE IF NOT EXISTS dbduel".into(),
        format!("CREATE USER IF NOT EXISTS 'dbduel'@'%'{identified}"),
        "GRANT ALL PRIVILEGES ON *.* TO 'dbduel'@'%' WITH GRANT OPTION".into(),
    ]);
    for sql in statements {
        s.batch(&sql).map_err(|e| {
            Error::Database(format!("creating the dbduel user failed: {}", e.message))
        })?;
    }
    Ok(())
}
