//! Connections as applications make them: `-C` on every engine (a connection per transaction,
//! its connect measured apart from the latency, the clients' random streams going on across connections),
//! `--reconnect-every` and `--reconnect-after` counted exactly or within the run's time, idle
//! connections seen by the server itself during the run (PostgreSQL's pg_stat_activity,
//! MariaDB's processlist), and the refusals of values that mean nothing.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::Trial;

use crate::env::{
    Env, TARGETS, Target, dbduel, ensure, expect_code, prepared_tpcb, read_result, refusals,
    run_json, session, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out: Vec<Trial> = TARGETS
        .iter()
        .map(|&target| {
            with_env(
                env,
                format!("connections::per_transaction::{}", target.label()),
                move |env| per_transaction(env, target),
            )
        })
        .collect();
    // Scripts (`run FILE.sql`) run -C in `per_transaction` above.
    for entry in dbduel::workload::all().filter(|e| e.name != "script") {
        let variant = entry.variants.first().copied();
        out.push(with_env(
            env,
            format!("connections::every_workload::{}::sqlite", entry.name),
            move |env| every_workload(env, entry.name, variant),
        ));
    }
    out.push(with_env(
        env,
        "connections::reconnect_every::postgres",
        reconnect_every,
    ));
    out.push(with_env(
        env,
        "connections::reconnect_after::postgres",
        reconnect_after,
    ));
    out.push(with_env(
        env,
        "connections::shards_merged::postgres",
        shards_merged,
    ));
    for target in [Target::Postgres, Target::MariaDb("InnoDB")] {
        out.push(with_env(
            env,
            format!("connections::idle_seen_by_the_server::{}", target.label()),
            move |env| idle_seen(env, target),
        ));
    }
    out.extend(refusals(
        "connections",
        [
            (
                "reconnect_every_0",
                &["run", "tpcb", "--reconnect-every", "0"][..],
                "--reconnect-every 0: give the transactions a connection serves, 1 or more",
            ),
            (
                "reconnect_every_negative",
                &["run", "tpcb", "--reconnect-every", "-3"][..],
                "--reconnect-every -3",
            ),
            (
                "reconnect_after_0",
                &["run", "tpcb", "--reconnect-after", "0"][..],
                "--reconnect-after 0: give the seconds a connection lives, more than 0",
            ),
            (
                "reconnect_after_negative",
                &["run", "tpcb", "--reconnect-after", "-1.5"][..],
                "--reconnect-after -1.5",
            ),
            (
                "idle_connections_negative",
                &["run", "tpcb", "--idle-connections", "-1"][..],
                "--idle-connections -1: give the idle connections to hold open, 0 or more",
            ),
            (
                "idle_connections_beyond_open_files",
                &["run", "tpcb", "--idle-connections", "4000000000"][..],
                "--idle-connections 4000000000: with 1 clients this process can hold at most",
            ),
            (
                "connect_with_reconnect_every",
                &["run", "tpcb", "-C", "--reconnect-every", "5"][..],
                "-C opens a connection for every transaction: --reconnect-every has nothing to renew",
            ),
            (
                "connect_with_reconnect_after",
                &["run", "tpcb", "--connect", "--reconnect-after", "2"][..],
                "--reconnect-after has nothing to renew",
            ),
        ],
    ));
    out
}

/// Each transaction draws a number from the client's script stream and writes it down, with the
/// run it belongs to.
const DRAWS: &str = "\\set r random(1, 1000000000)\n\
                     INSERT INTO drawn (run, c, r) VALUES (:run, :client_id, :r);";

/// `-C` on `target`: a connection per transaction (and the clients' first ones, closed before the
/// run), every transaction's latency starting after its connect; and the clients' random streams going on across connections: with one seed, the
/// numbers drawn with `-C` are those drawn without it, and none twice (a client rebuilt from its
/// seed on each connection would draw its first number again and again). Prepared statements, so
/// that each new connection prepares them again.
fn per_transaction(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "per_transaction");
    session(&dsn)
        .batch("CREATE TABLE drawn (run INTEGER, c INTEGER, r INTEGER)")
        .map_err(|e| format!("creating drawn: {e}"))?;
    let file = env.path(&format!("draws-{}.sql", target.label()));
    std::fs::write(&file, format!("{DRAWS}\n")).map_err(|e| e.to_string())?;
    let file = file.display().to_string();
    let mut results = Vec::new();
    for (run, flags) in [("1", &["-C"][..]), ("2", &[][..])] {
        let mut args = vec!["run", "-f", &file, "--dsn", &dsn, "-c", "2", "-t", "15"];
        args.extend(["--seed", "7", "-M", "prepared", "-D"]);
        let define = format!("run={run}");
        args.push(&define);
        args.extend(flags);
        let name = format!("per-transaction-{}-{run}", target.label());
        results.push(run_json(env, &name, &args, 0)?);
    }
    let r = &results[0];
    let c = &r["connections"];
    ensure(r["transactions"] == 30 && r["errors"] == 0, || {
        format!("30 transactions without errors: {r}")
    })?;
    ensure(c["per_transaction"] == 30 && c["initial"] == 2, || {
        format!("a connection per transaction and the clients' first two: {c}")
    })?;
    ensure(
        r["options"]["connections"]["per_transaction"] == true,
        || format!("options say -C: {}", r["options"]),
    )?;
    // A transaction's latency starts once its connection is open, as pgbench 14 and later
    // start it (the clients' first connections, opened all at once before the run, are left
    // out of the mean connect). On PostgreSQL (a process forked for each connection) and
    // Firebird (an attachment) a connect takes longer than a one-insert transaction: the mean
    // latency is under the mean connect, where it would be over with the connect inside it.
    let latency = r["latency_ms"]["mean"].as_f64().unwrap_or(0.0);
    let connect = c["connect_s"]["per_transaction"]
        .as_f64()
        .unwrap_or(f64::NAN)
        * 1000.0
        / 30.0;
    ensure(connect > 0.0 && latency > 0.0, || {
        format!("mean latency {latency} ms, mean connect of -C {connect} ms: {c}")
    })?;
    if matches!(target, Target::Postgres | Target::Firebird) {
        ensure(latency < connect, || {
            format!("mean latency {latency} ms holds the mean connect of -C, {connect} ms: {c}")
        })?;
    }
    ensure(c["connect_ms"]["mean"].as_f64() > Some(0.0), || {
        format!("every connection's connect time: {c}")
    })?;
    let without = &results[1]["connections"];
    ensure(
        without["per_transaction"] == 0 && without["opened"] == 2,
        || format!("without -C only the clients' two: {without}"),
    )?;
    let drawn = |run: i64| -> Result<Vec<(i64, i64)>, String> {
        let sql = format!("SELECT c, r FROM drawn WHERE run = {run}");
        let rows = session(&dsn).query_text(&sql).map_err(|e| e.to_string())?;
        let mut pairs: Vec<(i64, i64)> = rows
            .iter()
            .map(|row| (row[0].as_i64().unwrap_or(-1), row[1].as_i64().unwrap_or(-1)))
            .collect();
        pairs.sort_unstable();
        Ok(pairs)
    };
    let (with_c, plain) = (drawn(1)?, drawn(2)?);
    let mut numbers: Vec<i64> = with_c.iter().map(|p| p.1).collect();
    numbers.dedup();
    ensure(with_c.len() == 30 && numbers.len() == 30, || {
        format!("30 numbers drawn with -C, none twice: {with_c:?}")
    })?;
    ensure(with_c == plain, || {
        format!("the same draws with and without -C:\n{with_c:?}\n{plain:?}")
    })
}

/// `-C` on each workload (its first variant, if it has variants, on SQLite): every transaction on a connection of
/// its own, with the statements prepared again and the workload's session settings made again
/// (TPC-C's serializable isolation, TPC-H's timeout), no error, and `check` passing after it.
fn every_workload(env: &Env, workload: &str, variant: Option<&str>) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, &format!("c_{workload}"));
    // TPC-H at its smallest useful size, two queries per stream, each under a timeout of the
    // session's (made again on every connection); its streams fix their clients and their work.
    let (size, limits) = if workload == "tpch" {
        (
            ["--scale-factor", "0.01"],
            &["--queries", "1,6", "--query-timeout", "60"][..],
        )
    } else {
        (["--scale", "1"], &["-c", "2", "-t", "5"][..])
    };
    let prepare = ["prepare", workload, size[0], size[1], "--dsn", &dsn];
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let mut args = vec!["run", workload, "--dsn", &dsn, "-C"];
    args.extend(variant.iter().flat_map(|v| ["-b", v]));
    args.extend(["-M", "prepared", "--max-tries", "100"]);
    args.extend(limits);
    let r = run_json(env, &format!("every-workload-{workload}"), &args, 0)?;
    let c = &r["connections"];
    ensure(
        r["errors"] == 0 && r["transactions"].as_u64() > Some(0),
        || format!("transactions without errors: {r}"),
    )?;
    ensure(c["per_transaction"] == r["transactions"], || {
        format!("a connection per transaction: {c}")
    })?;
    expect_code(
        &dbduel(&["check", workload, "--dsn", &dsn]),
        0,
        "check after the run",
    )
}

/// `--reconnect-every 5` with `-t 20 -c 2`: each client replaces its connection after its 5th,
/// 10th and 15th transactions (not after its last): 6 in all, none by age; prepared statements
/// prepared again on each.
fn reconnect_every(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "reconnect_every")?;
    let args = [
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-c",
        "2",
        "-t",
        "20",
        "-M",
        "prepared",
        "--reconnect-every",
        "5",
    ];
    let r = run_json(env, "reconnect-every", &args, 0)?;
    let c = &r["connections"];
    ensure(r["transactions"] == 40 && r["errors"] == 0, || {
        format!("40 transactions without errors: {r}")
    })?;
    ensure(
        c["by_count"] == 6 && c["by_age"] == 0 && c["initial"] == 2 && c["opened"] == 8,
        || format!("6 reconnects by count over the clients' 2: {c}"),
    )?;
    let out = dbduel(&args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    ensure(text.contains("8 opened (6 reconnects by lifetime)"), || {
        format!("the summary's connections line:\n{text}")
    })
}

/// `--reconnect-after 0.5` over 3 s with 2 clients: each connection is replaced once it has
/// lived half a second, at the next transaction's boundary: 5 or 6 times per client (its first
/// connection's age counts from before the release; fewer when a loaded machine makes a
/// transaction slow, so 3 at least), never by count.
fn reconnect_after(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "reconnect_after")?;
    let args = [
        "run",
        "tpcb",
        "-S",
        "--dsn",
        &dsn,
        "-c",
        "2",
        "-T",
        "3",
        "--reconnect-after",
        "0.5",
    ];
    let r = run_json(env, "reconnect-after", &args, 0)?;
    let c = &r["connections"];
    let by_age = c["by_age"].as_u64().unwrap_or(0);
    ensure(
        r["errors"] == 0 && r["transactions"].as_u64() > Some(10),
        || format!("transactions without errors: {r}"),
    )?;
    ensure((6..=14).contains(&by_age) && c["by_count"] == 0, || {
        format!("about 2 x 6 reconnects by age in 3 s: {c}")
    })
}

/// Two shards of a `-C` run, merged: their connections summed (a connection per transaction,
/// each shard's client's first), their connect-time histograms added (the merged maximum is the
/// larger shard's), the storm over both shards' clients.
fn shards_merged(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "shards_merged")?;
    let args = [
        "run", "tpcb", "-S", "--dsn", &dsn, "-c", "2", "-T", "2", "-C",
    ];
    let files = crate::shards::run_shards(env, "shards-c", 2, &args)?;
    let mut maxima = Vec::new();
    for f in &files {
        let r = read_result(f)?;
        maxima.push(
            r["connections"]["connect_ms"]["max"]
                .as_f64()
                .unwrap_or(0.0),
        );
    }
    let merged = env.path("shards-c-merged.json");
    expect_code(&crate::shards::merge(&files, &merged), 0, "merge")?;
    let r = read_result(&merged)?;
    let c = &r["connections"];
    ensure(
        c["per_transaction"] == r["transactions"] && c["initial"] == 2 && c["storm_clients"] == 2,
        || format!("both shards' connections: {c}"),
    )?;
    let max = c["connect_ms"]["max"].as_f64().unwrap_or(0.0);
    let larger = maxima.iter().copied().fold(0.0, f64::max);
    ensure((max - larger).abs() <= larger * 0.01, || {
        format!("merged max {max} ms, the shards' {maxima:?}")
    })
}

/// `--idle-connections 20` beside one client: the server lists 20 idle sessions of the run's
/// database more than the client's while it runs, each holds one socket of dbduel's (not a
/// second handle as a client's has: ten thousand must fit the usual open-files limit), and the
/// result counts them, not as clients, with the time it took to open them all.
fn idle_seen(env: &Env, target: Target) -> Result<(), String> {
    let dsn = prepared_tpcb(env, target, "idle_connections")?;
    let db = dsn
        .rsplit('/')
        .next()
        .and_then(|d| d.split('?').next())
        .unwrap_or_default()
        .to_string();
    let sql = match target {
        Target::Postgres => format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' AND state = 'idle'"
        ),
        _ => format!(
            "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = '{db}' AND COMMAND = 'Sleep'"
        ),
    };
    let json = env.path(&format!("idle-{}.json", target.label()));
    let json_arg = json.display().to_string();
    let args = [
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-c",
        "1",
        "-T",
        "4",
        "--idle-connections",
        "20",
        "--json",
        &json_arg,
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut admin = env.admin(target);
    let (mut most, mut sockets) = (0, 0);
    let fds = format!("/proc/{}/fd", child.id());
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(15) {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        let rows = admin.query_text(&sql).map_err(|e| format!("{sql}: {e}"))?;
        most = most.max(rows[0][0].as_i64().unwrap_or(0));
        let open = std::fs::read_dir(&fds).into_iter().flatten().flatten();
        let socket = |e: &std::fs::DirEntry| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
        };
        sockets = sockets.max(open.filter(socket).count());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    expect_code(&out, 0, "run --idle-connections 20")?;
    ensure(most >= 20, || {
        format!("the server saw at most {most} idle sessions of {db} during the run")
    })?;
    // 20 idle ones, the client's two, the observers' few: two each for the idle ones is 40.
    ensure((21..40).contains(&sockets), || {
        format!("dbduel held at most {sockets} sockets open with 20 idle connections and 1 client")
    })?;
    let r = read_result(&json)?;
    let c = &r["connections"];
    ensure(
        c["idle"] == 20
            && c["connect_s"]["idle"].as_f64() > Some(0.0)
            && (0.0..15.0).contains(&c["idle_s"].as_f64().unwrap_or(-1.0))
            && c["idle_s"].as_f64() > Some(0.0)
            && c["initial"] == 1
            && r["options"]["clients"] == 1,
        || format!("20 idle connections beside 1 client: {c}"),
    )
}
