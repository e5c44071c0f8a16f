//! Managed servers are safe to leave running: a random password that only the invoking user
//! can read, printed DSNs without it, directories closed to other users, and no way in
//! without the password (not as dbduel, not as the engine's own superuser).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use libtest_mimic::Trial;

use crate::env::{dbduel, ensure, expect_code, text};

pub fn trials() -> Vec<Trial> {
    [
        ("postgres", "postgres://postgres@127.0.0.1:{port}/postgres"),
        // MariaDB's server is the mysql kind; `server start` takes either name.
        ("mariadb", "mysql://root@127.0.0.1:{port}/"),
        (
            "firebird",
            "firebird://SYSDBA:masterkey@127.0.0.1:{port}/dbduel",
        ),
    ]
    .into_iter()
    .map(|(engine, superuser)| {
        Trial::test(format!("managed::{engine}::safe_by_default"), move || {
            Ok(safe(engine, superuser)?)
        })
    })
    .collect()
}

fn mode(path: &Path) -> Result<u32, String> {
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn safe(engine: &str, superuser: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join(engine);
    let d = data.display().to_string();
    let out = dbduel(&["server", "start", engine, "--data-dir", &d]);
    expect_code(&out, 0, "server start")?;
    let result = check(&data, superuser, &text(&out));
    let stop = dbduel(&["server", "stop", "--data-dir", &d]);
    result?;
    expect_code(&stop, 0, "server stop")?;
    // A stopped server is still known: its engine, profile and data size.
    let status = dbduel(&["server", "status", "--data-dir", &d]);
    ensure(
        text(&status).contains(": stopped (was pid")
            && text(&status).contains("profile default")
            && text(&status).contains("data "),
        || format!("status after stop: {}", text(&status)),
    )
}

fn check(data: &Path, superuser: &str, started: &str) -> Result<(), String> {
    let d = data.display().to_string();
    let printed = started
        .lines()
        .find_map(|l| l.strip_prefix("dsn: "))
        .ok_or_else(|| format!("no dsn printed:\n{started}"))?
        .trim()
        .to_string();
    ensure(!printed.contains("dbduel:"), || {
        format!("the printed DSN carries the password: {printed}")
    })?;
    for (path, want) in [
        (data.to_path_buf(), 0o700),
        (data.join("data"), 0o700),
        (data.join("run"), 0o700),
        (data.join("password"), 0o600),
    ] {
        let got = mode(&path)?;
        ensure(got == want, || {
            format!("{} has mode {got:o}, not {want:o}", path.display())
        })?;
    }
    let password = std::fs::read_to_string(data.join("password")).map_err(|e| e.to_string())?;
    ensure(!started.contains(password.trim()), || {
        "start printed the password".into()
    })?;
    let full = dbduel(&["server", "dsn", "--data-dir", &d]);
    expect_code(&full, 0, "server dsn")?;
    let full = String::from_utf8_lossy(&full.stdout).trim().to_string();
    ensure(full.contains(password.trim()), || {
        format!("server dsn: {full}")
    })?;
    expect_code(
        &dbduel(&["prepare", "tpcb", "--dsn", &full]),
        0,
        "prepare with the server's DSN",
    )?;
    // Without the password, dbduel's user is refused; so is the engine's own superuser.
    let port = printed
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .ok_or_else(|| format!("no port in {printed}"))?;
    for dsn in [printed.clone(), superuser.replace("{port}", port)] {
        let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
        expect_code(&out, 2, &format!("check without the password ({dsn})"))?;
    }
    Ok(())
}
