//! Faults a run meets: a server that stops answering in the middle of a run (SIGSTOP) must
//! not hold the run past its end. The run ends a few seconds after `-T`, names the stuck
//! clients, counts their transactions as unfinished, and exits 1.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dbduel::server::{self, ServerKind};
use libtest_mimic::Trial;

use crate::env::{dbduel, ensure, expect_code, read_result};

pub fn trials() -> Vec<Trial> {
    [("postgres", &server::POSTGRES), ("mysql", &server::MARIADB)]
        .into_iter()
        .map(|(name, kind)| {
            Trial::test(format!("faults::{name}::stalled_server"), move || {
                Ok(stalled(kind)?)
            })
        })
        .collect()
}

/// Send `sig` to a process and to its children (PostgreSQL's backends each lead a session of
/// their own, so a process group would miss them).
fn signal_tree(pid: u32, sig: i32) {
    let children: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == pid).then(|| e.file_name().to_str()?.parse().ok())?
        })
        .collect();
    // SAFETY: signals to the test's own server processes.
    unsafe {
        libc::kill(pid as i32, sig);
        for c in children {
            libc::kill(c, sig);
        }
    }
}

fn stalled(kind: &'static ServerKind) -> Result<(), String> {
    let srv = server::start_for_tests(kind, &[]).map_err(|e| e.to_string())?;
    let pid = srv.pid().ok_or("no server pid")?;
    let db = if kind.engine == "mysql" { "dbduel" } else { "" };
    let dsn = srv.dsn_text(db);
    if kind.engine == "mysql" {
        crate::env::session(&srv.dsn_text(""))
            .batch("CREATE DATABASE IF NOT EXISTS dbduel")
            .map_err(|e| e.to_string())?;
    }
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json");
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "3", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(1500));
    signal_tree(pid, libc::SIGSTOP);
    let out = child.wait_with_output().map_err(|e| e.to_string());
    let took = started.elapsed();
    signal_tree(pid, libc::SIGCONT);
    let out = out?;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure(out.status.code() == Some(1), || {
        format!("expected exit 1, got {:?}:\n{all}", out.status.code())
    })?;
    // -T 3, then one grace before the cancel, two before giving up, two for the last queries.
    ensure(took < Duration::from_secs(3 + 5 + 4), || {
        format!("the run took {took:?} with -T 3:\n{all}")
    })?;
    ensure(all.contains("stuck in a transaction"), || {
        format!("the stuck clients are not named:\n{all}")
    })?;
    let r = read_result(&json)?;
    ensure(
        r["lost_clients"].as_array().is_some_and(|l| l.len() == 2),
        || format!("lost clients: {}", r["lost_clients"]),
    )?;
    ensure(r["unfinished"].as_u64().unwrap_or(0) >= 1, || {
        format!("unfinished: {}", r["unfinished"])
    })
}
