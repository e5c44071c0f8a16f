//! A managed MariaDB server: mariadb-install-db, mariadbd on a loopback port with the given
//! settings, a `dbduel` user with a password, fast shutdown.

use super::{
    Server, chown, command, find_binary, free_port, random_password, run_logged, server_dir,
    service_account, spawn_logged, wait_ready,
};
use crate::Error;
use crate::dsn::Dsn;
use crate::engine::{self, EngineOptions, Protocol};

/// Initialise and start a MariaDB server with `settings` (name, value) on a free port.
pub fn start_mariadb(settings: &[(&str, &str)]) -> Result<Server, Error> {
    let missing = || {
        Error::Usage("MariaDB server binaries not found: install the mariadb-server package".into())
    };
    let install =
        find_binary(&["mariadb-install-db", "mysql_install_db"], &[]).ok_or_else(missing)?;
    let mariadbd = find_binary(&["mariadbd", "mysqld"], &[]).ok_or_else(missing)?;
    let account = service_account("mysql");
    let dir = server_dir("dbduel-mariadb-")?;
    let data = dir.path().join("data");
    let run = dir.path().join("run");
    let log = dir.path().join("server.log");
    for p in [&data, &run] {
        std::fs::create_dir(p).map_err(|e| Error::Io(e.to_string()))?;
        chown(p, account)?;
    }
    let mut init = command(&install, None);
    init.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()));
    init.args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
    if account.is_some() {
        init.arg("--user=mysql");
    }
    run_logged(init, &log, "mariadb-install-db")?;
    let port = free_port()?;
    let socket = run.join("mysqld.sock");
    let mut cmd = command(&mariadbd, None);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()));
    cmd.args([
        format!("--port={port}"),
        "--bind-address=127.0.0.1".into(),
        format!("--socket={}", socket.display()),
    ]);
    cmd.arg(format!("--pid-file={}", run.join("mysqld.pid").display()));
    if account.is_some() {
        cmd.arg("--user=mysql");
    }
    for (k, v) in settings {
        cmd.arg(format!("--{k}={v}"));
    }
    let mut child = spawn_logged(cmd, &log, "mariadbd")?;
    let root = Dsn::parse(&format!(
        "mysql://root@localhost/?socket={}",
        socket.display()
    ))?;
    let engine = engine::open(&root, &EngineOptions::default(), Protocol::Simple)?;
    wait_ready(&mut child, &log, "mariadbd", || engine.connect().is_ok())?;
    let password = random_password();
    let mut s = engine.connect().map_err(|e| Error::Connect(e.message))?;
    let setup = [
        format!("CREATE USER 'dbduel'@'%' IDENTIFIED BY '{password}'"),
        "GRANT ALL PRIVILEGES ON *.* TO 'dbduel'@'%' WITH GRANT OPTION".to_string(),
    ];
    for sql in &setup {
        s.batch(sql).map_err(|e| {
            Error::Database(format!("setting up the dbduel user failed: {}", e.message))
        })?;
    }
    let version = s.server_info().map(|i| i.version).unwrap_or_default();
    let dsn = format!("mysql://dbduel:{password}@127.0.0.1:{port}/");
    Ok(Server {
        kind: "mariadb",
        port,
        version,
        dsn,
        child: Some(child),
        log,
        _dir: Some(dir),
    })
}
