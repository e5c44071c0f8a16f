//! Faults a run meets. A server that stops answering in the middle of a run (SIGSTOP) must
//! not hold the run past its end: the run ends a few seconds after `-T` (or, with `-t`, after
//! `--stall-timeout` without a transaction finishing), names the stuck
//! clients, counts their transactions as unfinished, and exits 1. A server killed (SIGKILL) and
//! started again in the middle of a run, or of a sweep's point, costs the run its lost
//! transactions and the time without a connection, all counted, and nothing else: the clients
//! wait it out and go on, the sweep marks the point and measures the next ones, and `check`
//! holds after crash recovery. And a transaction is applied whole or not at all on every
//! engine, under conflicts (tpcb at scale 1: one branch row for eight clients) and with
//! connections killed by the server in the middle of transactions.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use dbduel::server::{self, Server, ServerKind};
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, session, text, with_env};
use crate::sweep::{exported, first_run};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out: Vec<Trial> = [
        ("postgres", &server::POSTGRES),
        ("mysql", &server::MARIADB),
        ("firebird", &server::FIREBIRD),
    ]
    .into_iter()
    .map(|(name, kind)| {
        crate::env::trial(format!("faults::{name}::stalled_server"), move || {
            Ok(stalled(kind, &[], TIMED)?)
        })
    })
    .collect();
    // A count of transactions has no end of its own: the stall ends it.
    out.push(crate::env::trial(
        "faults::postgres::stalled_server_counted_run",
        || Ok(stalled(&server::POSTGRES, &["-c", "2"], COUNTED)?),
    ));
    // Clients as coroutines, four on two threads: stuck the same way, ended the same way.
    out.push(crate::env::trial(
        "faults::postgres::stalled_server_clients_sharing_threads",
        || Ok(stalled(&server::POSTGRES, &["-c", "4", "-j", "2"], TIMED)?),
    ));
    // PostgreSQL stays down longer than the ten tries with growing pauses (about 5.5 s) that
    // clients once gave a lost server before giving up: they must wait until the end of -T.
    for (name, kind, down_ms) in [
        ("postgres", &server::POSTGRES, 6000),
        ("mysql", &server::MARIADB, 1500),
        ("firebird", &server::FIREBIRD, 1500),
    ] {
        out.push(crate::env::trial(
            format!("faults::{name}::server_killed_mid_run"),
            move || Ok(killed_mid_run(kind, Duration::from_millis(down_ms))?),
        ));
    }
    out.push(crate::env::trial(
        "faults::postgres::server_killed_mid_sweep",
        || Ok(killed_mid_sweep()?),
    ));
    out.push(crate::env::trial(
        "faults::postgres::server_stalled_mid_sweep",
        || Ok(stalled_mid_sweep()?),
    ));
    let all = [
        Target::Sqlite,
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ];
    out.extend(each(env, &all, "atomic_under_conflicts_and_kills", atomic));
    out.push(crate::env::trial(
        "faults::closed_pipe_loses_only_lines",
        || Ok(closed_pipe()?),
    ));
    for (target, script) in [
        (Target::Sqlite, RUNAWAY),
        (Target::Sqlite, SLEEPY),
        (Target::Postgres, SLEEPY),
        (Target::MariaDb("InnoDB"), SLEEPY),
    ] {
        out.push(with_env(
            env,
            format!("faults::{}::{}_ends_with_the_run", target.label(), script.0),
            move |env| ends_with_the_run(env, target, script),
        ));
    }
    out.extend(each(
        env,
        &all[1..],
        "ycsb_result_kept_when_connections_die",
        ycsb_killed,
    ));
    out
}

/// One trial per target: `faults::TARGET::NAME`.
fn each(
    env: &Arc<Env>,
    targets: &[Target],
    name: &str,
    trial: fn(&Env, Target) -> Result<(), String>,
) -> Vec<Trial> {
    targets
        .iter()
        .map(|&target| {
            with_env(
                env,
                format!("faults::{}::{name}", target.label()),
                move |env| trial(env, target),
            )
        })
        .collect()
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

/// A fresh database for a trial that kills connections, and the server of its own that holds
/// it on Firebird: deleting attachments from MON$ATTACHMENTS while they are busy has brought
/// Firebird 3's server down, and with a shared server every other Firebird trial running
/// beside it (refused connections in nine trials at once).
fn killable_db(env: &Env, target: Target, name: &str) -> Result<(String, Option<Server>), String> {
    if !matches!(target, Target::Firebird) {
        return Ok((env.fresh_db(target, name), None));
    }
    let fb = env.own_server(&server::FIREBIRD, &[])?;
    let file = fb.dir().join("data").join(format!("{name}.fdb"));
    Ok((fb.dsn_text(&file.display().to_string()), Some(fb)))
}

/// tpcb-like at 8 clients on one branch row, with every client's connection killed three
/// times during the run; then `check` must find every balance adding up.
fn atomic(env: &Env, target: Target) -> Result<(), String> {
    let (dsn, mut own) = killable_db(env, target, "atomic")?;
    let outcome = atomic_on(target, &dsn, &mut own);
    told(&mut own, outcome)
}

/// A failure on a server of the trial's own says whether the server went down, and its log.
fn told(own: &mut Option<Server>, outcome: Result<(), String>) -> Result<(), String> {
    outcome.map_err(|e| match own {
        Some(srv) => {
            let how = match srv.exited() {
                Some(status) => format!("the server exited ({status})"),
                None => "the server is still running".to_string(),
            };
            format!("{e}\n{how}; its log:\n{}", srv.log_tail())
        }
        None => e,
    })
}

fn atomic_on(target: Target, dsn: &str, own: &mut Option<Server>) -> Result<(), String> {
    let dsn = dsn.to_string();
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
    kill_connections(target, &dsn, 3, own)?;
    let (r, all) = result_of(child, &json)?;
    ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
        format!("no transactions:\n{all}")
    })?;
    if killer(target).is_some() {
        ensure(r["reconnects"].as_u64().unwrap_or(0) > 0, || {
            format!("no connection was lost: the kills missed\n{all}")
        })?;
    }
    accounted(&r, &all)?;
    let check = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&check, 0, "check after conflicts and kills")
}

/// dbduel with stdout and stderr both a pipe whose reader is gone (`dbduel ... | head -0`):
/// its exit code.
fn with_closed_pipe(dir: &std::path::Path, args: &[&str]) -> Result<Option<i32>, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| e.to_string())?;
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(args)
        .current_dir(dir)
        .stdout(writer.try_clone().map_err(|e| e.to_string())?)
        .stderr(writer)
        .spawn()
        .map_err(|e| e.to_string())?;
    let status = wait_bounded(&mut child, Duration::from_secs(120), &args.join(" "))?;
    Ok(status.code())
}

/// Output to a closed pipe loses the lines, never a file still to be written nor a server
/// still to be stopped, and no command panics on it.
fn closed_pipe() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path();
    let db = format!("sqlite://{}", d.join("a.db").display());
    std::fs::write(
        d.join("p.toml"),
        "engines = [\"sqlite\"]\nclients = [1]\ntime = 1\nwarmup = 0\n",
    )
    .map_err(|e| e.to_string())?;
    let server = d.join("pg").display().to_string();
    let steps: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec!["prepare", "tpcb", "--dsn", &db], None),
        (
            vec![
                "run", "tpcb", "--dsn", &db, "-T", "2", "-P", "1", "--json", "r.json",
            ],
            Some("r.json"),
        ),
        (vec!["check", "tpcb", "--dsn", &db], None),
        (
            vec![
                "sweep",
                "p.toml",
                "--results",
                "s.db",
                "--report",
                "rep.html",
            ],
            Some("rep.html"),
        ),
        (vec!["results", "list", "--results", "s.db"], None),
        (vec!["results", "export", "--results", "s.db"], None),
        (
            vec!["report", "--format", "markdown", "--results", "s.db"],
            None,
        ),
        (vec!["list"], None),
        (
            vec!["server", "start", "postgres", "--data-dir", &server],
            None,
        ),
        (vec!["server", "status", "--data-dir", &server], None),
        (vec!["server", "dsn", "--data-dir", &server], None),
        (vec!["server", "stop", "--data-dir", &server], None),
    ];
    for (args, file) in steps {
        let code = with_closed_pipe(d, &args)?;
        ensure(code == Some(0), || {
            format!(
                "`dbduel {}` to a closed pipe exited {code:?}",
                args.join(" ")
            )
        })?;
        if let Some(f) = file {
            ensure(d.join(f).exists(), || {
                format!(
                    "`dbduel {}` to a closed pipe did not write {f}",
                    args.join(" ")
                )
            })?;
        }
    }
    // The server was stopped, not left running.
    let status = dbduel(&["server", "status", "--data-dir", &server]);
    ensure(text(&status).contains(": stopped"), || {
        format!("after `server stop` to a closed pipe: {}", text(&status))
    })
}

/// A statement that never ends (SQLite's recursive CTE without a limit).
const RUNAWAY: (&str, &str) = (
    "runaway_statement",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r;\n",
);
/// A script that waits far longer than the run inside its transaction.
const SLEEPY: (&str, &str) = ("sleep", "\\sleep 30 s\nSELECT 1;\n");

/// A script whose transaction outlasts `-T 2` by far ends with the run, within a grace: the
/// end of the run cancels what the engine can cancel (SQLite: `sqlite3_interrupt`) and cuts a
/// `\sleep` short, counting the transaction unfinished, and an idle server's client is not
/// called stuck.
fn ends_with_the_run(env: &Env, target: Target, script: (&str, &str)) -> Result<(), String> {
    let dsn = env.fresh_db(target, script.0);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join(format!("{}.sql", script.0));
    std::fs::write(&file, script.1).map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .arg("run")
        .arg(&file)
        .args(["--dsn", &dsn, "-T", "2", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let status = wait_bounded(&mut child, Duration::from_secs(25), "the run")?;
    let took = started.elapsed();
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure(took < Duration::from_secs(2 + 6), || {
        format!("the run took {took:?} with -T 2 ({status}):\n{all}")
    })?;
    ensure(!all.contains("stuck"), || {
        format!("a client is called stuck:\n{all}")
    })?;
    let r = read_result(&json).map_err(|e| format!("{e}\n{all}"))?;
    ensure(r["unfinished"].as_u64() == Some(1), || {
        format!("unfinished {} ({status}):\n{all}", r["unfinished"])
    })
}

/// Every other connection to the database killed by the server, `times` times 1.5 s apart
/// (nothing where the engine has no connections to kill).
///
/// Firebird 3.0.11's server now and then dies while busy attachments are deleted: of a
/// segmentation fault in its engine (the kernel's log names libEngine12.so) or of an abort
/// (its log: "terminate called after throwing an instance of 'Firebird::system_call_failed'"),
/// and the deleting attachment's connection is closed or reset. A client cannot rightly bring
/// a server down: it is the server's bug. On the trial's own server it is met as the harsher
/// fault it is, a crash: the server is started again on its port and data, as
/// `server_killed_mid_run` does, and the trial goes on. Every later check (result written,
/// errors accounted, `check` after crash recovery) still holds; a kill that fails while the
/// server runs fails the trial.
fn kill_connections(
    target: Target,
    dsn: &str,
    times: usize,
    own: &mut Option<Server>,
) -> Result<(), String> {
    let Some(sql) = killer(target) else {
        return Ok(());
    };
    let mut admin = session(dsn);
    for _ in 0..times {
        std::thread::sleep(Duration::from_millis(1500));
        let ids = match (admin.query_text(sql), own.as_mut()) {
            (Err(e), Some(srv)) => {
                let status = wait_exited(srv, Duration::from_secs(5))
                    .ok_or_else(|| format!("{sql}: {e}, and the server still runs"))?;
                eprintln!(
                    "the server crashed as attachments were deleted ({status}): started again"
                );
                srv.restart(&[]).map_err(|e| format!("restart: {e}"))?;
                admin = session(dsn);
                continue;
            }
            (ids, _) => ids.map_err(|e| format!("{sql}: {e}"))?,
        };
        if let Target::MariaDb(_) = target {
            for id in ids {
                let _ = admin.batch(&format!("KILL CONNECTION {}", id[0]));
            }
        }
    }
    Ok(())
}

/// How the server's main process ended, waited for up to `within`; None while it runs.
fn wait_exited(srv: &mut Server, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = srv.exited() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// YCSB with half its operations inserts, every connection killed twice during the run (the
/// run's own admin session included): the result is written all the same, `check ycsb` agrees
/// with the data, and the next run inserts no key twice (it may read a key whose insert failed,
/// and count that read failed, as YCSB does).
fn ycsb_killed(env: &Env, target: Target) -> Result<(), String> {
    let (dsn, mut own) = killable_db(env, target, "ycsb_killed")?;
    let outcome = ycsb_killed_on(target, &dsn, &mut own);
    told(&mut own, outcome)
}

fn ycsb_killed_on(target: Target, dsn: &str, own: &mut Option<Server>) -> Result<(), String> {
    let dsn = dsn.to_string();
    let mut prepare = vec!["prepare", "ycsb", "--dsn", &dsn, "-p", "recordcount=1000"];
    let flags = target.flags();
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare ycsb")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let run = |secs: &str, json: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_dbduel"))
            .args(["run", "ycsb", "--dsn", &dsn, "-P", "workloada", "-c", "4"])
            .args(["-p", "insertproportion=0.5", "-p", "updateproportion=0"])
            .args(["-T", secs, "--json"])
            .arg(json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())
    };
    let json = dir.path().join("r.json");
    let child = run("5", &json)?;
    kill_connections(target, &dsn, 2, own)?;
    let (r, all) = result_of(child, &json)?;
    ensure(
        r["transactions"].as_u64().unwrap_or(0) > 0 && r["reconnects"].as_u64().unwrap_or(0) > 0,
        || {
            format!(
                "transactions {} reconnects {}:\n{all}",
                r["transactions"], r["reconnects"]
            )
        },
    )?;
    accounted(&r, &all)?;
    ensure(!all.contains("dbduel_facts"), || {
        format!("the run's inserts were not recorded:\n{all}")
    })?;
    expect_code(
        &dbduel(&["check", "ycsb", "--dsn", &dsn]),
        0,
        "check ycsb after killed connections",
    )?;
    let again = dir.path().join("again.json");
    let out = run("1", &again)?
        .wait_with_output()
        .map_err(|e| e.to_string())?;
    let r = read_result(&again).map_err(|e| format!("{e}\n{}", text(&out)))?;
    // Only a read of a key whose insert failed may fail (YCSB's READ-FAILED: the key was
    // handed out and acknowledged all the same); no insert may meet a key already there.
    let kinds = r["errors_by_kind"].as_object().cloned().unwrap_or_default();
    ensure(kinds.keys().all(|k| k == "missed_row"), || {
        format!("the next run met errors: {}", r["errors_by_kind"])
    })?;
    expect_code(
        &dbduel(&["check", "ycsb", "--dsn", &dsn]),
        0,
        "check ycsb after the next run",
    )
}

/// A run that met faults, waited for: it exits 0 or 1 and writes its result; the result and
/// everything it printed.
fn result_of(
    child: std::process::Child,
    json: &std::path::Path,
) -> Result<(serde_json::Value, String), String> {
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure(matches!(out.status.code(), Some(0 | 1)), || {
        format!("run exit {:?}:\n{all}", out.status.code())
    })?;
    let r = read_result(json).map_err(|e| format!("{e}\n{all}"))?;
    Ok((r, all))
}

/// Every lost connection accounted for: as many transactions failed by a lost connection as
/// clients that reconnected or were lost for want of a new connection.
fn accounted(r: &serde_json::Value, all: &str) -> Result<(), String> {
    let kind = |k: &str| r["errors_by_kind"][k].as_u64().unwrap_or(0);
    let lost = kind("connection_lost") + kind("unreachable");
    let reconnects = r["reconnects"].as_u64().unwrap_or(0);
    let clients_lost = r["lost_clients"].as_array().map_or(0, |l| {
        l.iter()
            .filter_map(|m| m.as_str())
            .filter(|m| m.contains("could not reconnect") || m.contains("new connection"))
            .count()
    }) as u64;
    ensure(lost == reconnects + clients_lost, || {
        format!(
            "{lost} transactions lost their connection, {reconnects} reconnections and {clients_lost} clients lost:\n{all}"
        )
    })
}

/// Send `sig` to a process and to its children (PostgreSQL's backends each lead a session of
/// their own, so a process group would miss them).
fn signal_tree(pid: u32, sig: i32) {
    // SAFETY: signals to the test's own server processes.
    unsafe {
        libc::kill(pid as i32, sig);
        for c in server::descendants(pid) {
            libc::kill(c as i32, sig);
        }
    }
}

/// A stalled run's end: three seconds, or a count of transactions the run cannot reach and
/// three seconds without one finishing.
const TIMED: &[&str] = &["-T", "3"];
const COUNTED: &[&str] = &["-t", "100000000", "--stall-timeout", "3"];

/// `clients`: the clients' flags (2 clients on threads of their own when empty); `limit`:
/// `TIMED` or `COUNTED`.
fn stalled(kind: &'static ServerKind, clients: &[&str], limit: &[&str]) -> Result<(), String> {
    let clients = if clients.is_empty() {
        &["-c", "2"][..]
    } else {
        clients
    };
    let count: usize = clients[1].parse().map_err(|_| "clients' count")?;
    let srv = server::start_for_tests_in(kind, &[], crate::env::memory_for(kind))
        .map_err(|e| e.to_string())?;
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "tpcb", "--dsn", &dsn])
        .args(limit)
        .args(clients)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(1500));
    signal_tree(pid, libc::SIGSTOP);
    // Bounded, so that a run that hangs fails here rather than holding the suite (its summary
    // is far smaller than a pipe's buffer).
    let status = wait_bounded(&mut child, Duration::from_secs(60), "the stalled run");
    let took = started.elapsed();
    signal_tree(pid, libc::SIGCONT);
    let status = status?;
    let mut all = String::new();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut pipe = pipe;
        pipe.read_to_string(&mut all).map_err(|e| e.to_string())?;
    }
    ensure(status.code() == Some(1), || {
        format!("expected exit 1, got {:?}:\n{all}", status.code())
    })?;
    // -T 3 (or 1.5 s and a stall of 3), then one grace before the cancel, two before giving
    // up, two for the last queries, and room for a loaded machine: far from the hang it was.
    ensure(took < Duration::from_secs(3 + 5 + 7), || {
        format!("the run took {took:?} with {limit:?}:\n{all}")
    })?;
    ensure(
        limit == TIMED || all.contains("no transaction finished for 3 s"),
        || format!("the stall is not said:\n{all}"),
    )?;
    ensure(all.contains("stuck in a transaction"), || {
        format!("the stuck clients are not named:\n{all}")
    })?;
    let r = read_result(&json)?;
    ensure(
        r["lost_clients"]
            .as_array()
            .is_some_and(|l| l.len() == count),
        || format!("lost clients: {}", r["lost_clients"]),
    )?;
    ensure(r["unfinished"].as_u64().unwrap_or(0) >= 1, || {
        format!("unfinished: {}", r["unfinished"])
    })?;
    // The verdict is the stall, from the clients whose cancel got no answer, and the
    // sampler's reads said in words where they stalled with the server.
    let says = r["verdict"]["says"].as_str().unwrap_or_default();
    let stopped = r["waits"]["stopped"].as_str();
    ensure(
        r["verdict"]["limiter"] == "stalled"
            && says.starts_with(&format!(
                "the server stopped answering: {count} of {count} clients stuck"
            ))
            && stopped.is_none_or(|s| s.contains("no answer within")),
        || format!("sampling stopped ({stopped:?}), verdict: {says}"),
    )
}

/// A database on a test's own server, for tpcb: its DSN.
fn own_db(srv: &server::Server) -> Result<String, String> {
    if srv.kind.engine == "mysql" {
        crate::env::session(&srv.dsn_text(""))
            .batch("CREATE DATABASE IF NOT EXISTS dbduel")
            .map_err(|e| e.to_string())?;
        return Ok(srv.dsn_text("dbduel"));
    }
    // PostgreSQL's default database; Firebird's `dbduel` alias, created by the first connection.
    Ok(srv.dsn_text(""))
}

/// Wait for a child process with a bound; kill it and fail when it overstays (a hang).
fn wait_bounded(
    child: &mut std::process::Child,
    bound: Duration,
    what: &str,
) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} still running after {bound:?}: it hung"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// SIGKILL the server's processes and reap its main one.
fn kill_server(srv: &mut server::Server) -> Result<(), String> {
    let pid = srv.pid().ok_or("no server pid")?;
    signal_tree(pid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.exited().is_none() {
        if Instant::now() >= deadline {
            return Err(format!("the server (pid {pid}) survived SIGKILL for 10 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// `run tpcb -c 4 -T 12` with the server killed 2.5 s in and started again `down` later, on the
/// same port and data: the run ends on time, every client reconnects, every connection lost
/// is a counted error, the outage stays inside the window (tps over all of it), the exit code
/// says transactions failed, and `check` finds no half-applied transaction after recovery.
fn killed_mid_run(kind: &'static ServerKind, down: Duration) -> Result<(), String> {
    let mut srv = server::start_for_tests_in(kind, &[], crate::env::memory_for(kind))
        .map_err(|e| e.to_string())?;
    let dsn = own_db(&srv)?;
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json");
    let log = dir.path().join("run.log");
    let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    // Firebird 3 makes a waiting transaction conflict on the hot branch row: retry those.
    let tries = if kind.engine == "firebird" {
        "100000"
    } else {
        "100"
    };
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "tpcb", "--dsn", &dsn, "-c", "4", "-T", "12"])
        .args(["--max-tries", tries, "--json"])
        .arg(&json)
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_millis(2500));
    kill_server(&mut srv)?;
    std::thread::sleep(down);
    let restarted = srv.restart(&[]).map_err(|e| format!("restart: {e}"));
    // -T 12, one grace, and room for a loaded machine: a run that hangs fails here.
    let status = wait_bounded(&mut child, Duration::from_secs(12 + 20), "the run");
    let all = std::fs::read_to_string(&log).unwrap_or_default();
    restarted?;
    let status = status.map_err(|e| format!("{e}\n{all}"))?;
    let took = started.elapsed();
    ensure(!all.contains("panicked"), || {
        format!("dbduel panicked:\n{all}")
    })?;
    ensure(status.code() == Some(1), || {
        format!("a run with lost transactions must exit 1, got {status}:\n{all}")
    })?;
    let r = read_result(&json)?;
    let lost = r["errors_by_kind"]["connection_lost"].as_u64().unwrap_or(0);
    let reconnects = r["reconnects"].as_u64().unwrap_or(0);
    ensure(lost >= 4, || {
        format!("4 clients lost their connection, {lost} counted:\n{all}")
    })?;
    ensure(
        reconnects == lost && r["lost_clients"].as_array().is_some_and(Vec::is_empty),
        || {
            format!(
                "every lost connection must be reconnected: {lost} lost, {reconnects} reconnects, lost clients {}:\n{all}",
                r["lost_clients"]
            )
        },
    )?;
    ensure(r["errors"].as_u64() >= Some(lost), || {
        format!("errors {} < lost connections {lost}", r["errors"])
    })?;
    // Each client was without a connection at least while the server was down.
    let offline = r["disconnected_s"].as_f64().unwrap_or(0.0);
    ensure(offline >= 4.0 * down.as_secs_f64() * 0.9, || {
        format!("disconnected_s {offline} for 4 clients and a server down {down:?}:\n{all}")
    })?;
    let (n, secs, tps) = (
        r["transactions"].as_f64().unwrap_or(0.0),
        r["duration_s"].as_f64().unwrap_or(0.0),
        r["tps"].as_f64().unwrap_or(0.0),
    );
    ensure(
        (12.0..12.0 + 3.0).contains(&secs) && n > 0.0 && (tps - n / secs).abs() < 1e-6 * tps,
        || format!("tps {tps} is not {n} transactions over the whole window of {secs} s"),
    )?;
    let windows = r["windows"].as_array().cloned().unwrap_or_default();
    let count = |w: &serde_json::Value| w["transactions"].as_u64().unwrap_or(0);
    // The outage shows as a second with next to nothing in it: a server back within the
    // second (Firebird restarts fast) may let a few transactions through. Compared with the
    // busiest second, not the median: on a loaded machine the restart may take most of the run.
    let counts: Vec<u64> = windows.iter().map(count).collect();
    let (least, most) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    ensure(least * 10 < most, || {
        format!("no second of the outage: {windows:?}")
    })?;
    ensure(windows.iter().rev().take(2).any(|w| count(w) > 0), || {
        format!("the run did not go on after the restart: {windows:?}\n{all}")
    })?;
    ensure(took < Duration::from_secs(12 + 20), || {
        format!("the run took {took:?}")
    })?;
    let check = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&check, 0, "check after crash recovery")
}

/// What a sweep met by a fault left: its directory (kept while this lives), the managed
/// server's directory, the store, the exit status and everything it printed.
struct FaultedSweep {
    _dir: tempfile::TempDir,
    servers: std::path::PathBuf,
    results: String,
    status: std::process::ExitStatus,
    all: String,
}

/// A sweep of two points (2 and 3 clients, `time` seconds each) on a managed PostgreSQL whose
/// server is sent `sig` during the first point (and SIGCONT once the sweep ended, so that a
/// stopped server does not outlive the test); killed as hung after `bound`.
fn faulted_sweep(time: u64, sig: i32, bound: Duration) -> Result<FaultedSweep, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let servers = dir.path().join("servers");
    let plan = dir.path().join("fault.toml");
    std::fs::write(
        &plan,
        format!(
            "engines = [\"postgres\"]\nclients = [2, 3]\ntime = {time}\ndata_dir = \"{}\"\n",
            servers.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    let results = dir.path().join("r.db");
    let log = dir.path().join("sweep.log");
    let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .arg("sweep")
        .arg(&plan)
        .arg("--results")
        .arg(&results)
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| e.to_string())?;
    let signalled = signal_during_first_point(&servers.join("postgres"), sig);
    let status = wait_bounded(&mut child, bound, "the sweep");
    if let Ok(pid) = &signalled {
        signal_tree(*pid, libc::SIGCONT);
    }
    let all = std::fs::read_to_string(&log).unwrap_or_default();
    signalled.map_err(|e| format!("{e}\n{all}"))?;
    let status = status.map_err(|e| format!("{e}\n{all}"))?;
    Ok(FaultedSweep {
        _dir: dir,
        servers,
        results: results.display().to_string(),
        status,
        all,
    })
}

/// A sweep of two points on a managed PostgreSQL whose server is killed during the first: the
/// sweep starts it again and the run goes on; the first point is stored marked (a restart, its
/// errors and reconnections), the second measured clean on the restarted server, the sweep
/// exits 1, and `check` holds on the data it left.
fn killed_mid_sweep() -> Result<(), String> {
    let FaultedSweep {
        _dir,
        servers,
        results,
        status,
        all,
    } = faulted_sweep(10, libc::SIGKILL, Duration::from_secs(120))?;
    ensure(status.code() == Some(1), || {
        format!("a sweep with a killed server must exit 1, got {status}:\n{all}")
    })?;
    ensure(
        all.contains("was started again")
            && all.lines().any(|l| {
                l.contains("run 1:") && l.contains("errors") && l.contains("server restarted]")
            }),
        || format!("the restart is not said:\n{all}"),
    )?;
    let rows = exported(&results)?;
    ensure(rows.len() == 2, || {
        format!("{} points stored:\n{all}", rows.len())
    })?;
    let (hit, next) = (&rows[0], &rows[1]);
    ensure(
        hit["clients"] == 2
            && hit["server_restarts"] == 1
            && hit["errors"].as_i64() >= Some(2)
            && hit["reconnects"].as_i64() >= Some(2)
            && hit["tps"].as_f64() > Some(0.0),
        || format!("the point the kill hit is not stored marked: {hit}\n{all}"),
    )?;
    ensure(
        next["clients"] == 3
            && next["server_restarts"] == 0
            && next["errors"] == 0
            && next["tps"].as_f64() > Some(0.0),
        || format!("the next point is not a clean one: {next}\n{all}"),
    )?;
    let md = dbduel(&["report", "--format", "markdown", "--results", &results]);
    ensure(
        text(&md)
            .lines()
            .any(|l| l.contains("| 2 |") && l.contains("server restarted")),
        || format!("the report does not flag the point:\n{}", text(&md)),
    )?;
    let shown = first_run(&results)?;
    ensure(
        shown["server_restarts"][0]
            .as_str()
            .is_some_and(|l| l.contains("SIGKILL")),
        || format!("stored restart: {}", shown["server_restarts"]),
    )?;
    check_left_data(&servers.join("postgres"))
}

/// A managed server that stops answering (SIGSTOP) in the middle of a sweep's first point: the
/// point ends within seconds of its -T and is stored failed, with its stuck clients named; the
/// server, which no longer answers, is killed and started again before the next point, as a
/// service manager's watchdog would, and the next point is a clean one. Nothing hangs.
fn stalled_mid_sweep() -> Result<(), String> {
    let FaultedSweep {
        _dir,
        servers,
        results,
        status,
        all,
    } = faulted_sweep(4, libc::SIGSTOP, Duration::from_secs(90))?;
    ensure(status.code() == Some(1), || {
        format!("a sweep with a stalled point must exit 1, got {status}:\n{all}")
    })?;
    ensure(all.contains("stopped answering"), || {
        format!("the stalled server is not named:\n{all}")
    })?;
    let rows = exported(&results)?;
    ensure(rows.len() == 2, || {
        format!("{} points stored:\n{all}", rows.len())
    })?;
    let (hit, next) = (&rows[0], &rows[1]);
    let shown = first_run(&results)?;
    ensure(
        hit["clients"] == 2
            && shown["lost_clients"]
                .as_array()
                .is_some_and(|l| l.len() == 2),
        || format!("the stalled point is not stored failed: {shown}\n{all}"),
    )?;
    ensure(
        next["clients"] == 3 && next["errors"] == 0 && next["tps"].as_f64() > Some(0.0),
        || format!("the next point is not a clean one: {next}\n{all}"),
    )?;
    check_left_data(&servers.join("postgres"))
}

/// Wait for the sweep's first point to be under way (tpcb's history has rows), then signal its
/// server 1.5 s later (after a kill, crash recovery and the restart take seconds: the clients
/// must be back well before the point's end). Returns the server's pid.
fn signal_during_first_point(dir: &std::path::Path, sig: i32) -> Result<u32, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() >= deadline {
            return Err("the sweep's first point did not start within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
        let Ok(pidfile) = std::fs::read_to_string(dir.join("data/postmaster.pid")) else {
            continue;
        };
        let Ok(password) = std::fs::read_to_string(dir.join("password")) else {
            continue;
        };
        let lines: Vec<&str> = pidfile.lines().collect();
        let (Some(pid), Some(port)) = (lines.first(), lines.get(3)) else {
            continue;
        };
        let dsn = format!(
            "postgres://dbduel:{}@127.0.0.1:{port}/dbduel",
            password.trim()
        );
        let Ok(dsn) = dbduel::dsn::Dsn::parse(&dsn) else {
            continue;
        };
        let engine = dbduel::engine::open(
            &dsn,
            &dbduel::engine::EngineOptions::default(),
            dbduel::engine::Protocol::Simple,
        )
        .map_err(|e| e.to_string())?;
        let Ok(mut s) = engine.connect() else {
            continue;
        };
        let rows = s.query_text("SELECT count(*) FROM pgbench_history");
        if rows.is_ok_and(|r| r[0][0].as_i64() > Some(0)) {
            std::thread::sleep(Duration::from_millis(1500));
            let pid = pid.trim().parse().map_err(|_| "postmaster.pid")?;
            signal_tree(pid, sig);
            return Ok(pid);
        }
    }
}

/// Start a server on the data a sweep left, and run `check` there.
fn check_left_data(dir: &std::path::Path) -> Result<(), String> {
    let d = dir.display().to_string();
    expect_code(
        &dbduel(&["server", "start", "postgres", "--data-dir", &d]),
        0,
        "server start on the sweep's data",
    )?;
    let full = dbduel(&["server", "dsn", "--data-dir", &d]);
    let dsn = String::from_utf8_lossy(&full.stdout).trim().to_string();
    let dsn = format!("{}/dbduel", dsn.trim_end_matches("/postgres"));
    let check = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    let stop = dbduel(&["server", "stop", "--data-dir", &d]);
    expect_code(&check, 0, "check on the data the sweep left")?;
    expect_code(&stop, 0, "server stop")
}
