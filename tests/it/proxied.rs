//! Every connection dbduel opens, through the fault proxy (proxy.rs), on PostgreSQL and
//! MariaDB: a run whose connections stall, slow down, are cut or garbled in its middle ends on
//! time, writes its result and leaves data that `check` finds whole; a sweep whose server stalls
//! ends and keeps its point; a sweep whose results store is cut keeps the point in a file; a
//! prepare whose connection is cut or whose server stalls ends in one line, and its partial data
//! is refused.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, with_env};
use crate::proxy::{Proxy, Toxic};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for target in [Target::Postgres, Target::MariaDb("InnoDB")] {
        for toxic in [Toxic::Stall, Toxic::Slow, Toxic::Cut, Toxic::Garble] {
            out.push(with_env(
                env,
                format!("proxied::{}::run_meets_{toxic:?}", target.label()).to_lowercase(),
                move |env| run_meets(env, target, toxic),
            ));
        }
    }
    out.push(with_env(
        env,
        "proxied::postgres::sweep_meets_stall",
        sweep_meets_stall,
    ));
    for store in [Target::Postgres, Target::MariaDb("InnoDB")] {
        out.push(with_env(
            env,
            format!(
                "proxied::{}::sweep_store_cut_keeps_the_point",
                store.label()
            ),
            move |env| store_cut(env, store),
        ));
    }
    out.push(with_env(
        env,
        "proxied::postgres::ycsb_record_unwritten_fails_the_run",
        record_unwritten,
    ));
    for target in [Target::Postgres, Target::MariaDb("InnoDB")] {
        out.push(with_env(
            env,
            format!("proxied::{}::prepare_cut_is_refused_after", target.label()),
            move |env| prepare_cut(env, target),
        ));
        out.push(with_env(
            env,
            format!("proxied::{}::prepare_meets_stall", target.label()),
            move |env| prepare_stall(env, target),
        ));
    }
    out
}

/// `prepare tpcb --scale 20` whose server stalls in the middle of the load (every connection,
/// new ones too, left unanswered): it ends about 30 s later (the stall guard's limit), in one
/// line that names the stall, exit 2; and `run` refuses the partial data once the server
/// answers again.
fn prepare_stall(env: &Env, target: Target) -> Result<(), String> {
    let (proxy, proxied, child, _dir) =
        prepare_through_proxy(env, target, "proxied_prepare_stall")?;
    proxy.set(Toxic::Stall);
    let ended = finish(child, Duration::from_secs(75));
    proxy.set(Toxic::Pass);
    let (code, all) = ended?;
    let last = all.trim().lines().last().unwrap_or_default().to_string();
    ensure(
        code == Some(2)
            && last.starts_with("dbduel: prepare failed")
            && last.contains("answered no new connection"),
        || {
            format!(
                "a prepare on a stalled server must end in one line naming the stall, exit 2; got {code:?}:\n{all}"
            )
        },
    )?;
    let out = dbduel(&["run", "tpcb", "--dsn", &proxied, "-T", "1"]);
    expect_code(&out, 2, "run after a stalled prepare")?;
    let said = crate::env::text(&out);
    ensure(said.contains("prepare did not finish"), || {
        format!("run after a stalled prepare:\n{said}")
    })
}

/// YCSB with inserts through the proxy, cut near the end of the run and left cut: the record
/// of its inserts cannot be written, even on a new connection; the result is written all the
/// same, says so in `unrecorded`, and the run exits 1.
fn record_unwritten(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "proxied_ycsb");
    expect_code(
        &dbduel(&["prepare", "ycsb", "--dsn", &dsn, "-p", "recordcount=1000"]),
        0,
        "prepare ycsb",
    )?;
    let upstream = port_of(&dsn);
    let proxy = Proxy::start(upstream);
    let proxied = proxy.dsn(&dsn, upstream);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let child = spawn(
        &[
            "run",
            "ycsb",
            "--dsn",
            &proxied,
            "-P",
            "workloadd",
            "-T",
            "3",
            "--json",
            "r.json",
        ],
        dir.path(),
    )?;
    std::thread::sleep(Duration::from_millis(2500));
    proxy.set(Toxic::Cut);
    let (code, all) = finish(child, Duration::from_secs(40))?;
    ensure(code == Some(1), || {
        format!("exit {code:?}, expected 1:\n{all}")
    })?;
    let r = read_result(&dir.path().join("r.json")).map_err(|e| format!("{e}\n{all}"))?;
    ensure(
        r["unrecorded"]
            .as_str()
            .is_some_and(|u| u.contains("dbduel_facts"))
            && r["transactions"].as_u64().unwrap_or(0) > 0,
        || format!("unrecorded {}:\n{all}", r["unrecorded"]),
    )
}

/// `prepare tpcb --scale 20` whose connection is cut in the middle of the load: one line, exit
/// 2; then `run` and `check` (through the proxy again) refuse the partial data, naming the
/// unfinished prepare.
fn prepare_cut(env: &Env, target: Target) -> Result<(), String> {
    let (proxy, proxied, child, _dir) = prepare_through_proxy(env, target, "proxied_prepare")?;
    proxy.set(Toxic::Cut);
    std::thread::sleep(Duration::from_millis(300));
    proxy.set(Toxic::Pass);
    let (code, all) = finish(child, Duration::from_secs(60))?;
    ensure(
        code == Some(2)
            && all
                .trim()
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("dbduel: ")),
        || {
            format!(
                "a prepare whose connection was cut must end in one line, exit 2; got {code:?}:\n{all}"
            )
        },
    )?;
    for verb in ["run", "check"] {
        let out = dbduel(&[verb, "tpcb", "--dsn", &proxied]);
        expect_code(&out, 2, &format!("{verb} after a cut prepare"))?;
        let said = crate::env::text(&out);
        ensure(said.contains("prepare did not finish"), || {
            format!("{verb} after a cut prepare:\n{said}")
        })?;
    }
    Ok(())
}

/// `prepare tpcb --scale 20` on a fresh database through a proxy, 800 ms under way: the proxy,
/// the proxied DSN, the child and its directory.
fn prepare_through_proxy(
    env: &Env,
    target: Target,
    db: &str,
) -> Result<(Proxy, String, std::process::Child, tempfile::TempDir), String> {
    let dsn = env.fresh_db(target, db);
    let upstream = port_of(&dsn);
    let proxy = Proxy::start(upstream);
    let proxied = proxy.dsn(&dsn, upstream);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut args = vec!["prepare", "tpcb", "--dsn", &proxied, "--scale", "20"];
    let flags = target.flags();
    args.extend(flags.iter().map(String::as_str));
    let child = spawn(&args, dir.path())?;
    std::thread::sleep(Duration::from_millis(800));
    Ok((proxy, proxied, child, dir))
}

/// The server port in a DSN of the test servers.
fn port_of(dsn: &str) -> u16 {
    dsn.rsplit_once('@')
        .and_then(|(_, r)| r.split_once(':'))
        .and_then(|(_, r)| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the DSN")
}

/// A child dbduel with its output kept.
fn spawn(args: &[&str], dir: &Path) -> Result<std::process::Child, String> {
    Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())
}

/// Wait for a child within `bound`; its exit code and output (killed and failed past it).
fn finish(
    mut child: std::process::Child,
    bound: Duration,
) -> Result<(Option<i32>, String), String> {
    let deadline = Instant::now() + bound;
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let out = child.wait_with_output().map_err(|e| e.to_string())?;
            return Err(format!(
                "still running after {bound:?}: it hung\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure(!all.contains("panicked"), || format!("it panicked:\n{all}"))?;
    Ok((out.status.code(), all))
}

/// tpcb, 2 clients for 4 s through the proxy, the toxic applied 1.5 s in (a cut lasts 1 s, then
/// connections are let through again).
fn run_meets(env: &Env, target: Target, toxic: Toxic) -> Result<(), String> {
    let dsn = env.fresh_db(target, &format!("proxied_{toxic:?}").to_lowercase());
    let mut prepare = vec!["prepare", "tpcb", "--dsn", &dsn];
    let flags = target.flags();
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let upstream = port_of(&dsn);
    let proxy = Proxy::start(upstream);
    let proxied = proxy.dsn(&dsn, upstream);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let child = spawn(
        &[
            "run", "tpcb", "--dsn", &proxied, "-c", "2", "-T", "4", "--json", "r.json",
        ],
        dir.path(),
    )?;
    std::thread::sleep(Duration::from_millis(1500));
    proxy.set(toxic);
    if toxic == Toxic::Cut {
        std::thread::sleep(Duration::from_secs(1));
        proxy.set(Toxic::Pass);
    }
    let started = Instant::now();
    let ended = finish(child, Duration::from_secs(40));
    proxy.set(Toxic::Pass);
    let (code, all) = ended?;
    let took = started.elapsed();
    // -T 4 from 1.5 s in, then the end's graces (cancel, give up, the admin's deadlines).
    ensure(took < Duration::from_secs(2 + 15), || {
        format!("{toxic:?}: the run took {took:?} past the fault:\n{all}")
    })?;
    let want: &[i32] = match toxic {
        Toxic::Pass | Toxic::Slow | Toxic::Cut => &[0, 1],
        Toxic::Stall | Toxic::Garble => &[1],
    };
    ensure(code.is_some_and(|c| want.contains(&c)), || {
        format!("{toxic:?}: exit {code:?}, expected one of {want:?}:\n{all}")
    })?;
    let r = read_result(&dir.path().join("r.json")).map_err(|e| format!("{e}\n{all}"))?;
    ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
        format!("{toxic:?}: no transaction kept:\n{all}")
    })?;
    if toxic == Toxic::Cut {
        ensure(r["reconnects"].as_u64().unwrap_or(0) > 0, || {
            format!("a cut without a reconnection:\n{all}")
        })?;
    }
    // Straight to the server: every transaction applied whole or not at all.
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        &format!("check after {toxic:?}"),
    )
}

/// A sweep through the proxy (its clients and its observer) whose server stalls in its only
/// point: the point ends within seconds of its -T and is stored, failed, with the stuck
/// clients named.
fn sweep_meets_stall(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "proxied_sweep");
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    let upstream = port_of(&dsn);
    let proxy = Proxy::start(upstream);
    let proxied = proxy.dsn(&dsn, upstream);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(
        dir.path().join("stall.toml"),
        format!(
            "engines = [\"postgres\"]\nclients = [2]\ntime = 4\n\n[dsn]\npostgres = \"{proxied}\"\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let child = spawn(&["sweep", "stall.toml", "--results", "r.db"], dir.path())?;
    // The sweep prepares its data first: stall once its clients are under way.
    let deadline = Instant::now() + Duration::from_secs(30);
    while proxy.accepted() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    proxy.set(Toxic::Stall);
    let ended = finish(child, Duration::from_secs(60));
    proxy.set(Toxic::Pass);
    let (code, all) = ended?;
    ensure(code == Some(1), || {
        format!("a sweep with a stalled point must exit 1, got {code:?}:\n{all}")
    })?;
    let results = dir.path().join("r.db").display().to_string();
    let shown = crate::sweep::first_run(&results)?;
    ensure(
        shown["lost_clients"]
            .as_array()
            .is_some_and(|l| l.len() == 2),
        || format!("the stalled point is not stored failed: {shown}\n{all}"),
    )
}

/// A sweep whose results store (PostgreSQL or MariaDB) is reached through the proxy, cut while
/// the point runs: the point cannot be stored, so it is kept in a file of the current
/// directory, which the refusal names.
fn store_cut(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "proxied_data");
    let store = env.fresh_db(target, "proxied_store");
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    let upstream = port_of(&store);
    let proxy = Proxy::start(upstream);
    let proxied_store = proxy.dsn(&store, upstream);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(
        dir.path().join("cut.toml"),
        format!(
            "engines = [\"postgres\"]\nclients = [1]\ntime = 3\n\n[dsn]\npostgres = \"{dsn}\"\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let child = spawn(
        &["sweep", "cut.toml", "--results", &proxied_store],
        dir.path(),
    )?;
    std::thread::sleep(Duration::from_millis(2500));
    proxy.set(Toxic::Cut);
    let (code, all) = finish(child, Duration::from_secs(60))?;
    ensure(code == Some(2), || {
        format!("a sweep that cannot store its point must exit 2, got {code:?}:\n{all}")
    })?;
    let kept: Vec<String> = std::fs::read_dir(dir.path())
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("dbduel-unsaved-"))
        .collect();
    ensure(kept.len() == 1 && all.contains(&kept[0]), || {
        format!("the point is not kept in a named file ({kept:?}):\n{all}")
    })?;
    let r = read_result(&dir.path().join(&kept[0]))?;
    ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
        format!("the kept point has no transactions: {r}")
    })
}
