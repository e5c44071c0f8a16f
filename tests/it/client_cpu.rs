//! The client-bound verdict on runs whose nature is known: a script that computes far more
//! than it queries (flagged), one that sleeps on the server (not flagged), and runs of ten
//! transactions per client (no figure over 100%, nothing judged absurd).

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, Test, dbduel, ensure, expect_code, read_result, text, trials_of};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 7] = [
        ("computing_client_is_flagged::postgres", computing),
        ("computing_client_is_flagged::mariadb", computing_mariadb),
        ("waiting_client_is_not_flagged::postgres", waiting),
        (
            "computing_clients_sharing_a_thread_are_flagged::postgres",
            computing_shared,
        ),
        (
            "waiting_clients_sharing_threads_are_not_flagged::postgres",
            waiting_shared,
        ),
        ("ten_transactions_judged_sanely::postgres", few_postgres),
        ("ten_transactions_judged_sanely::sqlite", few_sqlite),
    ];
    trials_of(env, "client_cpu", tests)
}

/// Run a script; returns the result and the summary printed.
fn run(
    env: &Env,
    name: &str,
    dsn: &str,
    script: &str,
    args: &[&str],
) -> Result<(serde_json::Value, String), String> {
    let file = env.path(&format!("{name}.sql"));
    std::fs::write(&file, script).map_err(|e| e.to_string())?;
    let json = env.path(&format!("{name}.json"));
    let (f, j) = (file.display().to_string(), json.display().to_string());
    let mut all = vec!["run", "-f", &f, "--dsn", dsn, "--json", &j];
    all.extend(args);
    let out = dbduel(&all);
    expect_code(&out, 0, name)?;
    Ok((read_result(&json)?, text(&out)))
}

/// Every client-CPU figure between 0 and 100%, a figure for every client thread, and the
/// verdict matching the rule the figures give.
fn sane(r: &serde_json::Value, clients: u64) -> Result<(), String> {
    let t = &r["client_threads"];
    ensure(t["threads"] == clients, || format!("client_threads {t}"))?;
    for (what, v) in [
        ("busy", &t["busy"]),
        ("busiest", &t["busiest"]),
        ("client_cpu_share", &r["client_cpu_share"]),
    ] {
        let v = v.as_f64().unwrap_or(f64::NAN);
        ensure((0.0..=1.0).contains(&v), || {
            format!("{what} = {v}: {t}, share {}", r["client_cpu_share"])
        })?;
    }
    ensure(t["busy"].as_f64() <= t["busiest"].as_f64(), || {
        format!("busy over the busiest: {t}")
    })?;
    if r["engine"]["embedded"] == true {
        return ensure(r["client_bound"] == false, || {
            "an embedded engine judged client-bound".into()
        });
    }
    let rule = t["busy"].as_f64() > Some(0.5) || r["client_cpu_share"].as_f64() > Some(0.5);
    ensure(r["client_bound"] == rule, || {
        format!(
            "client_bound {} but client_threads {t}, share {}",
            r["client_bound"], r["client_cpu_share"]
        )
    })
}

/// Ten thousand `\set` of a hash, then `SELECT 1`: the client thread computes for
/// milliseconds and waits for the server for a fraction of one (on a loaded machine the
/// server's answer may take a millisecond or more, hence so much computing). Client-bound by
/// the threads' own clocks (the rule: busy over half of their time), whatever share of the
/// machine one thread is.
fn computing(env: &Env) -> Result<(), String> {
    computing_on(env, Target::Postgres, "computing", &["-c", "1"], 1)
}

/// The same client on MariaDB: the verdict is the client's there too, and its processlist
/// agrees (the session asleep between statements most of the time).
fn computing_mariadb(env: &Env) -> Result<(), String> {
    computing_on(
        env,
        Target::MariaDb("InnoDB"),
        "computing_mariadb",
        &["-c", "1"],
        1,
    )
}

/// Two computing clients on one thread (`-j 1`): the thread is judged, busy, client-bound.
fn computing_shared(env: &Env) -> Result<(), String> {
    computing_on(
        env,
        Target::Postgres,
        "computing_shared",
        &["-c", "2", "-j", "1"],
        1,
    )
}

/// The computing script with `clients` (flags), judged over `threads` client threads.
fn computing_on(
    env: &Env,
    target: Target,
    name: &str,
    clients: &[&str],
    threads: u64,
) -> Result<(), String> {
    let dsn = env.fresh_db(target, name);
    let mut script = String::from("\\set x 1\n");
    for i in 0..10_000 {
        script.push_str(&format!("\\set x hash(:x + {i})\n"));
    }
    script.push_str("SELECT 1;\n");
    let mut args = clients.to_vec();
    args.extend(["-T", "2"]);
    let (r, out) = run(env, name, &dsn, &script, &args)?;
    sane(&r, threads)?;
    let t = &r["client_threads"];
    // The share of the run the thread computed or waited for a core to compute on.
    let (busy, cpu) = (t["busy"].as_f64(), t["cpu_s"].as_f64());
    let queued = t["run_queue_s"].as_f64().unwrap_or(0.0);
    let wanted = busy.zip(cpu).map(|(b, c)| b * (c + queued) / c.max(1e-9));
    ensure(wanted > Some(0.6), || {
        format!("a computing client wanted a core only: {t}")
    })?;
    // The server's sessions agree: idle most of the time.
    let inside: f64 = r["waits"]["by_class"]
        .as_object()
        .map_or(9.0, |m| m.values().filter_map(|v| v.as_f64()).sum());
    ensure(inside < 0.5, || format!("waits {}", r["waits"]))?;
    if busy <= Some(0.6) {
        // A machine the rest of the suite loads kept the thread waiting for a core (it was
        // seen computing 54% of the run, queued 41%): then exactly what the rule says on the
        // run's own figures, the client, or the machine's CPU.
        let expected = if r["client_bound"] == true {
            "client"
        } else {
            crate::verdicts::client_side_limiter(&r).unwrap_or("in the server")
        };
        return ensure(r["verdict"]["limiter"] == expected, || {
            format!(
                "verdict {} where the rule says {expected}: {t}, host {}",
                r["verdict"], r["host_cpu_busy"]
            )
        });
    }
    ensure(r["client_bound"] == true, || {
        format!("not flagged: {t}, share {}", r["client_cpu_share"])
    })?;
    ensure(
        out.contains("CLIENT-BOUND: dbduel's client threads were busy"),
        || format!("summary:\n{out}"),
    )?;
    ensure(
        r["verdict"]["limiter"] == "client" && out.contains("limited by: the client"),
        || format!("verdict {}, waits {}", r["verdict"], r["waits"]),
    )
}

/// `SELECT pg_sleep(0.005)` at two clients: each thread waits 5 ms per transaction and works
/// for tens of microseconds. Not client-bound.
fn waiting(env: &Env) -> Result<(), String> {
    waiting_on(env, "waiting", &["-c", "2"], 2)
}

/// Eight sleeping clients on two threads (`-j 2`): the threads wait too; not client-bound.
fn waiting_shared(env: &Env) -> Result<(), String> {
    waiting_on(env, "waiting_shared", &["-c", "8", "-j", "2"], 2)
}

/// The sleeping script with `clients` (flags), judged over `threads` client threads.
fn waiting_on(env: &Env, name: &str, clients: &[&str], threads: u64) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, name);
    let mut args = clients.to_vec();
    args.extend(["-T", "2"]);
    let (r, out) = run(env, name, &dsn, "SELECT pg_sleep(0.005);\n", &args)?;
    sane(&r, threads)?;
    let t = &r["client_threads"];
    ensure(t["busy"].as_f64() < Some(0.3), || {
        format!("a sleeping client busy: {t}")
    })?;
    ensure(
        r["client_bound"] == false && !out.contains("CLIENT-BOUND"),
        || format!("flagged: {t}, share {}\n{out}", r["client_cpu_share"]),
    )
}

/// Ten transactions per client, eight clients: a window of a few milliseconds, in which the
/// process's CPU (read up to the clients' end) once came to 233% of the machine.
fn few_postgres(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "few");
    let (r, _) = run(
        env,
        "few-pg",
        &dsn,
        "SELECT pg_sleep(0.001);\n",
        &["-c", "8", "-t", "10"],
    )?;
    ensure(r["transactions"] == 80, || format!("{}", r["transactions"]))?;
    sane(&r, 8)?;
    ensure(r["client_bound"] == false, || {
        format!(
            "flagged: {}, share {}",
            r["client_threads"], r["client_cpu_share"]
        )
    })
}

/// The same on SQLite, where closing eight connections at the end does real work: figures
/// within 100%, and no client-bound verdict (the engine runs inside dbduel).
fn few_sqlite(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "few");
    let script = "CREATE TABLE IF NOT EXISTS few (a int);\nINSERT INTO few VALUES (1);\n";
    let (r, _) = run(env, "few-sqlite", &dsn, script, &["-c", "8", "-t", "10"])?;
    ensure(r["transactions"] == 80, || {
        format!("{} {}", r["transactions"], r["error_messages"])
    })?;
    sane(&r, 8)
}
