//! Faults a run meets. A server that stops answering in the middle of a run (SIGSTOP) must
//! not hold the run past its end: the run ends a few seconds after `-T`, names the stuck
//! clients, counts their transactions as unfinished, and exits 1. And a transaction is applied
//! whole or not at all on every engine, under conflicts (tpcb at scale 1: one branch row for
//! eight clients) and with connections killed by the server in the middle of transactions.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use dbduel::server::{self, ServerKind};
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, session};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out: Vec<Trial> = [("postgres", &server::POSTGRES), ("mysql", &server::MARIADB)]
        .into_iter()
        .map(|(name, kind)| {
            Trial::test(format!("faults::{name}::stalled_server"), move || {
                Ok(stalled(kind)?)
            })
        })
        .collect();
    for target in [
        Target::Sqlite,
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ] {
        let env = env.clone();
        out.push(Trial::test(
            format!(
                "faults::{}::atomic_under_conflicts_and_kills",
                target.label()
            ),
            move || Ok(atomic(&env, target)?),
        ));
    }
    out
}

/// SQL that ends every other connection to the database (None: nothing to kill).
fn killer(target: Target) -> Option<&'static str> {
    match target {
        Target::Postgres => Some(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        ),
        Target::MariaDb(_) => Some(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()",
        ),
        Target::Firebird => Some(
            "DELETE FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID <> CURRENT_CONNECTION \
             AND MON$SYSTEM_FLAG = 0",
        ),
        Target::Sqlite => None,
    }
}

/// tpcb-like at 8 clients on one branch row, with every client's connection killed three
/// times during the run; then `check` must find every balance adding up.
fn atomic(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "atomic");
    let mut prepare = vec!["prepare", "tpcb", "--dsn", &dsn];
    let flags = target.flags();
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args([
            "run", "tpcb", "--dsn", &dsn, "-c", "8", "-T", "6", "-M", "prepared",
        ])
        .args(["--max-tries", target.max_tries(), "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(sql) = killer(target) {
        let mut admin = session(&dsn);
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(1500));
            let ids = admin.query_text(sql).map_err(|e| format!("{sql}: {e}"))?;
            if let Target::MariaDb(_) = target {
                for id in ids {
                    let _ = admin.batch(&format!("KILL CONNECTION {}", id[0]));
                }
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure(matches!(out.status.code(), Some(0 | 1)), || {
        format!("run exit {:?}:\n{all}", out.status.code())
    })?;
    let r = read_result(&json)?;
    ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
        format!("no transactions:\n{all}")
    })?;
    if killer(target).is_some() {
        ensure(r["reconnects"].as_u64().unwrap_or(0) > 0, || {
            format!("no connection was lost: the kills missed\n{all}")
        })?;
    }
    let check = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&check, 0, "check after conflicts and kills")
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
    // -T 3, then one grace before the cancel, two before giving up, two for the last queries,
    // and room for a loaded machine: far from the hang it was.
    ensure(took < Duration::from_secs(3 + 5 + 7), || {
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
