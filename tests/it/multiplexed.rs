//! Many clients on a thread (`-j N`, and by default past 8 clients a core on PostgreSQL): on
//! PostgreSQL and MariaDB the clients run as coroutines on the threads asked for, each with its own random
//! streams (the same transactions as with a thread each), the open loop's schedule kept; a run
//! on a stalled server still ends (in `faults.rs`). Where a client would block its thread
//! (SQLite, Firebird) each keeps a thread of its own, and `-j 0` is refused.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, per_target, refusals, run_json};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let servers = [Target::Postgres, Target::MariaDb("InnoDB")];
    let mut out = per_target(env, "multiplexed::same_draws", &servers, same_draws);
    out.extend(per_target(
        env,
        "multiplexed::open_loop",
        &servers,
        open_loop,
    ));
    out.extend(per_target(
        env,
        "multiplexed::threads_without_j",
        &servers,
        unasked,
    ));
    out.extend(per_target(
        env,
        "multiplexed::a_thread_each_where_a_client_blocks",
        &[Target::Sqlite, Target::Firebird],
        thread_each,
    ));
    out.extend(refusals(
        "multiplexed",
        [(
            "no_threads",
            &[
                "run",
                "tpcb",
                "--dsn",
                "sqlite:///nonexistent/x.db",
                "-j",
                "0",
            ][..],
            "-j 0",
        )],
    ));
    out
}

/// The threads that ran the clients, from a result.
fn threads_of(r: &serde_json::Value) -> u64 {
    r["client_threads"]["threads"].as_u64().unwrap_or(0)
}

/// Eight clients, 60 transactions each, one seed: on 2 threads (coroutines) and on a thread
/// each, every client draws the same accounts and deltas, so the history's count and sum of
/// deltas agree whatever the interleaving; and the result says how many threads ran them.
fn same_draws(env: &Env, target: Target) -> Result<(), String> {
    let mut seen = Vec::new();
    for jobs in ["2", "8"] {
        let dsn = env.fresh_db(target, &format!("draws_j{jobs}"));
        let mut prepare = vec!["prepare", "tpcb", "--dsn", &dsn];
        let flags = target.flags();
        prepare.extend(flags.iter().map(String::as_str));
        expect_code(&dbduel(&prepare), 0, "prepare")?;
        let r = run_json(
            env,
            &format!("draws_{}_{jobs}", target.label()),
            &[
                "run", "tpcb", "-N", "--dsn", &dsn, "-c", "8", "-t", "60", "--seed", "11", "-j",
                jobs, "-M", "prepared",
            ],
            0,
        )?;
        ensure(r["transactions"].as_u64() == Some(480), || {
            format!("-j {jobs}: transactions {}", r["transactions"])
        })?;
        let threads = threads_of(&r);
        ensure(threads == jobs.parse::<u64>().unwrap(), || {
            format!("-j {jobs}: {threads} threads ran the clients")
        })?;
        let rows = crate::env::session(&dsn)
            .query_text("SELECT COUNT(*), SUM(delta) FROM pgbench_history")
            .map_err(|e| e.to_string())?;
        seen.push(format!("{:?}", rows[0]));
        expect_code(&dbduel(&["check", "tpcb", "--dsn", &dsn]), 0, "check")?;
    }
    ensure(seen[0] == seen[1], || {
        format!("the clients drew other transactions on 2 threads than on 8: {seen:?}")
    })
}

/// An open loop of 20 clients on 2 threads keeps its rate, and its latency counts from the
/// scheduled starts (a schedule lag is reported).
fn open_loop(env: &Env, target: Target) -> Result<(), String> {
    let dsn = crate::env::prepared_tpcb(env, target, "mx_open")?;
    let r = run_json(
        env,
        &format!("mx_open_{}", target.label()),
        &[
            "run", "tpcb", "-S", "--dsn", &dsn, "-c", "20", "-j", "2", "-R", "300", "-T", "3",
        ],
        0,
    )?;
    let tps = r["tps"].as_f64().unwrap_or(0.0);
    ensure((255.0..=345.0).contains(&tps), || {
        format!("300 tps asked, {tps} made")
    })?;
    ensure(r["errors"].as_u64() == Some(0), || {
        format!("errors: {}", r["errors"])
    })?;
    ensure(!r["schedule_lag_ms"].is_null(), || {
        "no schedule lag in an open loop".to_string()
    })?;
    ensure(threads_of(&r) == 2, || {
        format!("{} threads", threads_of(&r))
    })
}

/// Without `-j`, past 8 clients a core: PostgreSQL's clients share threads, 8 a thread, at
/// least one and at most four a core (24 a core: three threads a core, not one); MariaDB's keep
/// a thread each.
fn unasked(env: &Env, target: Target) -> Result<(), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let clients = 24 * cores;
    let dsn = crate::env::prepared_tpcb(env, target, "mx_unasked")?;
    let c = clients.to_string();
    let r = run_json(
        env,
        &format!("mx_unasked_{}", target.label()),
        &["run", "tpcb", "-S", "--dsn", &dsn, "-c", &c, "-T", "1"],
        0,
    )?;
    let expected = match target {
        Target::Postgres => 3 * cores,
        _ => clients,
    };
    ensure(threads_of(&r) == expected, || {
        format!(
            "{} threads ran {clients} clients on {cores} cores, not {expected}",
            threads_of(&r)
        )
    })
}

/// `-j 2` where a client would block its thread: a thread per client all the same.
fn thread_each(env: &Env, target: Target) -> Result<(), String> {
    let dsn = crate::env::prepared_tpcb(env, target, "mx_each")?;
    let r = run_json(
        env,
        &format!("mx_each_{}", target.label()),
        &[
            "run", "tpcb", "-S", "--dsn", &dsn, "-c", "4", "-j", "2", "-T", "1",
        ],
        0,
    )?;
    ensure(threads_of(&r) == 4, || {
        format!("{} threads ran 4 clients", threads_of(&r))
    })
}
