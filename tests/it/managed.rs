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
        crate::env::trial(format!("managed::{engine}::safe_by_default"), move || {
            Ok(safe(engine, superuser)?)
        })
    })
    .chain([
        crate::env::trial(
            "managed::postgres::closed_after_restart_and_pid_reuse",
            || Ok(restart_and_reuse()?),
        ),
        crate::env::trial("managed::refuses_before_writing", || Ok(refusals()?)),
    ])
    .collect()
}

/// A directory's entries and mode, to tell that a refusal wrote nothing.
fn snapshot(path: &Path) -> (Vec<String>, u32) {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (names, mode(path).unwrap_or(0))
}

/// Bad ports, a path too deep for the server's socket, another user's directory, a directory
/// holding something else, and one under a directory the server's account cannot pass
/// through are each refused in one line (exit 2), before initdb and before anything is
/// written into the directory.
fn refusals() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let fresh = dir.path().join("fresh").display().to_string();
    let deep = dir.path().join("d".repeat(100)).display().to_string();
    let mut cases: Vec<(Vec<String>, &str, Option<std::path::PathBuf>)> = vec![
        (
            vec![
                "--port".into(),
                "0".into(),
                "--data-dir".into(),
                fresh.clone(),
            ],
            "--port 0",
            None,
        ),
        (
            vec![
                "--port".into(),
                "22".into(),
                "--data-dir".into(),
                fresh.clone(),
            ],
            "--port 22",
            None,
        ),
        (vec!["--data-dir".into(), deep], "too deep", None),
        (
            vec![
                "--set".into(),
                "work_mem".into(),
                "--data-dir".into(),
                fresh.clone(),
            ],
            "write a setting as KNOB=VALUE",
            None,
        ),
    ];
    // A directory of our own that holds a data/ folder dbduel did not make.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("data")).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| e.to_string())?;
    cases.push((
        vec!["--data-dir".into(), other.display().to_string()],
        "holds no server dbduel made",
        Some(other.clone()),
    ));
    // Another user's closed directory with a data/ folder (only root can make one).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let foreign = dir.path().join("foreign");
        std::fs::create_dir_all(foreign.join("data")).map_err(|e| e.to_string())?;
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        cases.push((
            vec!["--data-dir".into(), foreign.display().to_string()],
            "belongs to another user",
            Some(foreign),
        ));
        // A directory of root's, closed to others, above the server's: its account (postgres)
        // could not pass through it.
        let closed = dir.path().join("closed");
        std::fs::create_dir_all(&closed).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        cases.push((
            vec!["--data-dir".into(), closed.join("pg").display().to_string()],
            "the server runs as the postgres account, which cannot pass through",
            Some(closed),
        ));
    }
    for (args, want, watched) in cases {
        let before = watched.as_deref().map(snapshot);
        let mut all = vec!["server".to_string(), "start".into(), "postgres".into()];
        all.extend(args);
        let out = dbduel(&all);
        let said = text(&out);
        expect_code(&out, 2, &all.join(" "))?;
        ensure(
            said.contains(want) && said.trim().lines().count() == 1,
            || format!("`{}` said:\n{said}", all.join(" ")),
        )?;
        if let (Some(path), Some(before)) = (watched.as_deref(), before) {
            ensure(snapshot(path) == before, || {
                format!(
                    "`{}` changed {}: {:?} -> {:?}",
                    all.join(" "),
                    path.display(),
                    before,
                    snapshot(path)
                )
            })?;
        }
        ensure(!Path::new(&fresh).exists(), || {
            format!("`{}` made {fresh}", all.join(" "))
        })?;
    }
    Ok(())
}

/// A server's directory stays closed (0700) when it is started again, and a start with
/// `--connections 300` takes that many (max_connections raised to 310, 110 by default: 100
/// clients and dbduel's own), even beside a `--set max_connections` lower, while its other
/// `--set` settings hold and `server status` names them; and when the server
/// crashed and its pid was taken by another process, `server status` does not call that
/// process the server and `server stop` does not signal it.
fn restart_and_reuse() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("pg");
    let d = data.display().to_string();
    for (round, more) in [("start", None), ("start again", Some("300"))] {
        // The first start names the directory relative to where dbduel runs.
        let relative = more.is_none();
        let dir_arg = if relative { "pg" } else { d.as_str() };
        let mut args = vec!["server", "start", "postgres", "--data-dir", dir_arg];
        args.extend(more.iter().flat_map(|n| ["--connections", n]));
        if more.is_some() {
            args.extend(["--set", "work_mem=7MB", "--set", "max_connections=20"]);
        }
        let started = if relative {
            crate::env::dbduel_in(dir.path(), &args)
        } else {
            dbduel(&args)
        };
        expect_code(&started, 0, round)?;
        let full = dbduel(&["server", "dsn", "--data-dir", &d]);
        let dsn = String::from_utf8_lossy(&full.stdout).trim().to_string();
        let rows = crate::env::session(&dsn)
            .query_text("SHOW max_connections")
            .map_err(|e| format!("SHOW max_connections after {round}: {e}"))?;
        let most = rows[0][0].as_i64().unwrap_or_default();
        let want = if more.is_some() { 310 } else { 110 };
        ensure(most == want, || {
            format!(
                "after `{}`: max_connections {most}, not {want}",
                args.join(" ")
            )
        })?;
        let work_mem = crate::env::session(&dsn)
            .query_text("SHOW work_mem")
            .map_err(|e| format!("SHOW work_mem after {round}: {e}"))?[0][0]
            .to_string();
        let status = text(&dbduel(&["server", "status", "--data-dir", &d]));
        let (want_mem, named) = if more.is_some() {
            (
                "7MB",
                status.contains("profile default, work_mem=7MB, max_connections=20"),
            )
        } else {
            ("4MB", status.contains("profile default, data"))
        };
        ensure(work_mem == want_mem && named, || {
            format!(
                "after `{}`: work_mem {work_mem}, not {want_mem}; status: {status}",
                args.join(" ")
            )
        })?;
        let got = mode(&data)?;
        let stop = dbduel(&["server", "stop", "--data-dir", &d]);
        ensure(got == 0o700, || {
            format!("after {round}, {d} has mode {got:o}")
        })?;
        expect_code(&stop, 0, "server stop")?;
    }
    expect_code(
        &dbduel(&["server", "start", "postgres", "--data-dir", &d]),
        0,
        "start",
    )?;
    // --server DIR: the DSN and password from the directory, never on the command line.
    let prepared = dbduel(&["prepare", "tpcb", "--server", &d]);
    let state_path = data.join("dbduel-server.json");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let pid = state["pid"].as_u64().ok_or("no pid in the state file")? as i32;
    // SAFETY: kills the test's own server (its backends end with their postmaster).
    unsafe { libc::kill(pid, libc::SIGKILL) };
    expect_code(&prepared, 0, "prepare --server")?;
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut reused = state.clone();
    reused["pid"] = other.id().into();
    std::fs::write(&state_path, reused.to_string()).map_err(|e| e.to_string())?;
    let status = dbduel(&["server", "status", "--data-dir", &d]);
    let stop = dbduel(&["server", "stop", "--data-dir", &d]);
    let survived = other.try_wait().map_err(|e| e.to_string())?.is_none();
    let _ = other.kill();
    let _ = other.wait();
    ensure(text(&status).contains(": stopped (was pid"), || {
        format!("status with the pid reused: {}", text(&status))
    })?;
    expect_code(&stop, 0, "server stop with the pid reused")?;
    ensure(survived, || {
        "server stop killed the process that reused the pid".into()
    })
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
