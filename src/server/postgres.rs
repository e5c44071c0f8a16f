//! A managed PostgreSQL server: initdb with password authentication, postgres on a loopback
//! port with the given settings, fast shutdown.

use std::path::PathBuf;

use super::{
    Server, chown, command, find_binary, free_port, random_password, run_logged, server_dir,
    service_account, spawn_logged, wait_ready,
};
use crate::Error;
use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions, Protocol};

/// Debian installs each major version in /usr/lib/postgresql/<version>/bin; newest first.
fn bin_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
    dirs.into_iter().map(|(_, d)| d).collect()
}

/// Initialise and start a PostgreSQL server with `settings` (name, value) on a free port.
pub fn start_postgres(settings: &[(&str, &str)]) -> Result<Server, Error> {
    let dirs = bin_dirs();
    let missing = || {
        Error::Usage("PostgreSQL server binaries not found: install the postgresql package".into())
    };
    let initdb = find_binary(&["initdb"], &dirs).ok_or_else(missing)?;
    let postgres = initdb.with_file_name("postgres");
    let account = service_account("postgres");
    let dir = server_dir("dbduel-pg-")?;
    let data = dir.path().join("data");
    let log = dir.path().join("server.log");
    std::fs::create_dir(&data).map_err(|e| Error::Io(e.to_string()))?;
    for p in [&data, &dir.path().to_path_buf()] {
        chown(p, account)?;
    }
    let password = random_password();
    let pwfile = dir.path().join("pwfile");
    std::fs::write(&pwfile, &password).map_err(|e| Error::Io(e.to_string()))?;
    chown(&pwfile, account)?;
    let mut init = command(&initdb, account);
    init.arg("-D").arg(&data).args([
        "-U",
        "dbduel",
        "-E",
        "UTF8",
        "--no-sync",
        "--auth-host=scram-sha-256",
        "--auth-local=trust",
    ]);
    init.arg(format!("--pwfile={}", pwfile.display()));
    run_logged(init, &log, "initdb")?;
    let _ = std::fs::remove_file(&pwfile);
    let port = free_port()?;
    let mut cmd = command(&postgres, account);
    cmd.arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"]);
    cmd.arg("-c")
        .arg(format!("unix_socket_directories={}", dir.path().display()));
    for (k, v) in settings {
        cmd.arg("-c").arg(format!("{k}={v}"));
    }
    let mut child = spawn_logged(cmd, &log, "postgres")?;
    let dsn_text = format!("postgres://dbduel:{password}@127.0.0.1:{port}/");
    let dsn = Dsn::parse(&format!("{dsn_text}postgres"))?;
    let engine = engine::open(&dsn, &EngineOptions::default(), Protocol::Simple)?;
    wait_ready(&mut child, &log, "postgres", || engine.connect().is_ok())?;
    let version = engine
        .connect()
        .and_then(|mut s| s.server_info())
        .map(|i| i.version)
        .unwrap_or_default();
    Ok(Server {
        kind: "postgres",
        port,
        version,
        dsn: dsn_text,
        child: Some(child),
        log,
        _dir: Some(dir),
    })
}
