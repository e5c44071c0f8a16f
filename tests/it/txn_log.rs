//! pgbench's transaction logs (`-l`) on SQLite, checked as PostgreSQL's own pgbench tests check
//! pgbench's (`src/bin/pgbench/t/001_pgbench_with_server.pl`, `check_pgbench_logs`): one file
//! named `PREFIX.PID`, its line count, and every line's shape; with `--sampling-rate` part of
//! the transactions; in an open loop with `-L` the schedule lag column and `skipped` lines;
//! aggregated lines of pgbench's fifteen columns whose counts add up to the run's; the flags'
//! misuses refused as pgbench refuses them; and, on PostgreSQL beside pgbench itself with the
//! same flags, lines of the same columns; with `--failures-detailed`, a failure's kind in its
//! line; with `-j 2`, a file per thread named as pgbench names them.

use std::path::Path;
use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, prepared_tpcb, run_json, text};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = crate::env::trials_of(
        env,
        "txn_log",
        [
            (
                "per_transaction_as_pgbench_tests",
                per_transaction as crate::env::Test,
            ),
            ("open_loop_lag_and_skipped", open_loop),
            ("aggregated_fifteen_columns", aggregated),
            ("same_columns_as_pgbench_postgres", beside_pgbench),
            ("failures_detailed_postgres", failures_detailed),
            ("split_by_thread_as_pgbench", by_thread),
        ],
    );
    out.extend(crate::env::refusals(
        "txn_log",
        [
            (
                "sampling_without_log",
                &["run", "tpcb", "--sampling-rate", "0.5"][..],
                "--sampling-rate is for the transaction log: add -l",
            ),
            (
                "sampling_and_aggregate",
                &[
                    "run",
                    "tpcb",
                    "-l",
                    "--sampling-rate",
                    "0.5",
                    "--aggregate-interval",
                    "1",
                ][..],
                "cannot be used together",
            ),
            (
                "sampling_rate_above_one",
                &["run", "tpcb", "-l", "--sampling-rate", "2"][..],
                "more than 0 and at most 1",
            ),
            (
                "interval_not_dividing_time",
                &["run", "tpcb", "-l", "--aggregate-interval", "3", "-T", "10"][..],
                "-T 10 is not a multiple of it",
            ),
        ],
    ));
    out
}

/// The log files `PREFIX.*` in `dir`, as (name, lines).
fn logs(dir: &Path, prefix: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy().to_string();
        if let Some(rest) = name.strip_prefix(&format!("{prefix}.")) {
            let text = std::fs::read_to_string(dir.join(&name)).map_err(|e| e.to_string())?;
            let digits = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit());
            ensure(
                rest.split('.').count() <= 2 && rest.split('.').all(digits),
                || format!("{name}: not named PREFIX.PID or PREFIX.PID.THREAD"),
            )?;
            out.push((name, text.lines().map(str::to_string).collect()));
        }
    }
    Ok(out)
}

/// Whether `line`'s fields match `shape`: `d` a number, `c` a client id in 0..clients, `1` a
/// single digit, `t` a number or `failed` or `skipped`.
fn shaped(line: &str, shape: &str, clients: u32) -> bool {
    let fields: Vec<&str> = line.split(' ').collect();
    let number = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit());
    fields.len() == shape.len()
        && shape.chars().zip(&fields).all(|(k, f)| match k {
            'd' => number(f),
            'c' => f.parse::<u32>().is_ok_and(|c| c < clients),
            '1' => f.len() == 1 && number(f),
            't' => number(f) || *f == "failed" || *f == "skipped",
            _ => false,
        })
}

/// pgbench's two cases: 2 clients of 50 select-only transactions with `--sampling-rate=0.5`
/// (8 to 92 lines), and 1 client of 10 (10 lines, client 0, transaction numbers 1 to 10).
fn per_transaction(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Sqlite, "txn_log")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = |p: &str| format!("--log-prefix={}/{p}", dir.path().display());
    let sampled = prefix("001_pgbench_log_2");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-S",
        "-t",
        "50",
        "-c",
        "2",
        "--log",
        "--sampling-rate=0.5",
        &sampled,
    ]);
    expect_code(&out, 0, "sampled log")?;
    let files = logs(dir.path(), "001_pgbench_log_2")?;
    ensure(files.len() == 1, || format!("log files {files:?}"))?;
    let lines = &files[0].1;
    ensure(
        (8..=92).contains(&lines.len()) && lines.iter().all(|l| shaped(l, "cdd1dd", 2)),
        || format!("{} lines: {lines:?}", lines.len()),
    )?;
    let all = prefix("001_pgbench_log_3");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-b",
        "select-only",
        "-t",
        "10",
        "-l",
        &all,
    ]);
    expect_code(&out, 0, "log")?;
    let files = logs(dir.path(), "001_pgbench_log_3")?;
    ensure(files.len() == 1, || format!("log files {files:?}"))?;
    let lines = &files[0].1;
    let numbers: Vec<String> = lines
        .iter()
        .filter_map(|l| l.split(' ').nth(1).map(str::to_string))
        .collect();
    ensure(
        lines.len() == 10
            && lines
                .iter()
                .all(|l| l.starts_with("0 ") && shaped(l, "cdd1dd", 1))
            && numbers == (1..=10).map(|n| n.to_string()).collect::<Vec<_>>(),
        || format!("{lines:?}"),
    )?;
    ensure(text(&out).contains("transaction log written to"), || {
        text(&out)
    })
}

/// One client of 20 ms transactions at 100 a second with `-L 30`: each line has the schedule
/// lag column, and the skipped ones say `skipped`, as many as the result counts.
fn open_loop(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "txn_log_open");
    let script = env.path("txn-log-sleep.sql");
    std::fs::write(&script, "\\sleep 20 ms\nSELECT 1;\n").map_err(|e| e.to_string())?;
    let script = script.display().to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = format!("--log-prefix={}/lagged", dir.path().display());
    let r = run_json(
        env,
        "txn_log_open",
        &[
            "run", &script, "--dsn", &dsn, "-R", "100", "-L", "30", "-T", "2", "-l", &prefix,
        ],
        0,
    )?;
    let files = logs(dir.path(), "lagged")?;
    let lines = files.first().map(|f| f.1.clone()).unwrap_or_default();
    let skipped = lines.iter().filter(|l| l.contains(" skipped ")).count() as u64;
    ensure(
        lines.iter().all(|l| shaped(l, "cdt1ddd", 1))
            && skipped == r["latency_limit"]["skipped"].as_u64().unwrap_or(u64::MAX)
            && lines.len() as u64 - skipped == r["transactions"].as_u64().unwrap_or(0),
        || format!("latency_limit {}, lines {lines:?}", r["latency_limit"]),
    )
}

/// `-T 3 --aggregate-interval 1`, 2 clients: three lines of fifteen numbers, one a second from
/// the measured part's start, whose transactions add up to the run's, the lag columns 0 in a
/// closed loop.
fn aggregated(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Sqlite, "txn_log_agg")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = format!("--log-prefix={}/agg", dir.path().display());
    let r = run_json(
        env,
        "txn_log_agg",
        &[
            "run",
            "tpcb",
            "--dsn",
            &dsn,
            "-S",
            "-c",
            "2",
            "-T",
            "3",
            "-l",
            "--aggregate-interval=1",
            &prefix,
        ],
        0,
    )?;
    let files = logs(dir.path(), "agg")?;
    let lines = files.first().map(|f| f.1.clone()).unwrap_or_default();
    let rows: Vec<Vec<u64>> = lines
        .iter()
        .map(|l| l.split(' ').filter_map(|f| f.parse().ok()).collect())
        .collect();
    let sum: u64 = rows.iter().map(|r| r[1]).sum();
    ensure(
        rows.len() == 3
            && rows
                .iter()
                .all(|r| r.len() == 15 && r[6..10] == [0, 0, 0, 0])
            && rows.windows(2).all(|w| w[1][0] == w[0][0] + 1)
            && sum == r["transactions"].as_u64().unwrap_or(0),
        || format!("{lines:?} for {} transactions", r["transactions"]),
    )
}

/// The columns of each line of the one log file under `prefix`: a number, or the word there.
fn columns(dir: &Path, prefix: &str) -> Result<Vec<Vec<String>>, String> {
    let files = logs(dir, prefix)?;
    ensure(files.len() == 1, || {
        format!("{prefix}: log files {files:?}")
    })?;
    Ok(files[0]
        .1
        .iter()
        .map(|l| {
            l.split(' ')
                .map(|f| {
                    if f.bytes().all(|b| b.is_ascii_digit()) && !f.is_empty() {
                        "n".to_string()
                    } else {
                        f.to_string()
                    }
                })
                .collect()
        })
        .collect())
}

/// pgbench and dbduel with the same flags on one PostgreSQL database (select-only, 2 clients):
/// per transaction in an open loop with retries, and aggregated; every line of dbduel's log has
/// the columns pgbench's lines have.
fn beside_pgbench(env: &Env) -> Result<(), String> {
    let pgbench = ["/usr/bin/pgbench", "/usr/local/bin/pgbench"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .ok_or("pgbench not found: install the postgresql package")?;
    let dsn = prepared_tpcb(env, Target::Postgres, "txn_log_pg")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let cases: [(&str, &[&str]); 2] = [
        (
            "each",
            &[
                "-S",
                "-c",
                "2",
                "-T",
                "2",
                "-R",
                "100",
                "--max-tries=3",
                "-l",
            ],
        ),
        (
            "agg",
            &["-S", "-c", "2", "-T", "2", "-l", "--aggregate-interval=1"],
        ),
    ];
    for (name, flags) in cases {
        let theirs = format!("--log-prefix={}/pgbench_{name}", dir.path().display());
        let out = std::process::Command::new(pgbench)
            .arg("-n")
            .args(flags)
            .arg(&theirs)
            .arg(&dsn)
            .output()
            .map_err(|e| e.to_string())?;
        expect_code(&out, 0, &format!("pgbench {flags:?}"))?;
        let ours = format!("--log-prefix={}/dbduel_{name}", dir.path().display());
        let mut args = vec!["run", "tpcb", "--dsn", &dsn];
        args.extend(flags);
        args.push(&ours);
        expect_code(&dbduel(&args), 0, &format!("dbduel {flags:?}"))?;
        let (a, b) = (
            columns(dir.path(), &format!("pgbench_{name}"))?,
            columns(dir.path(), &format!("dbduel_{name}"))?,
        );
        let shapes = |c: &[Vec<String>]| {
            let mut s: Vec<Vec<String>> = c.to_vec();
            s.sort();
            s.dedup();
            s
        };
        let (sa, sb) = (shapes(&a), shapes(&b));
        ensure(
            !a.is_empty() && !b.is_empty() && sb.iter().all(|l| sa.contains(l)),
            || format!("{name}: pgbench's lines are {sa:?}, dbduel's {sb:?}"),
        )?;
    }
    Ok(())
}

/// Four clients of REPEATABLE READ updates of one row with one try each: serialization
/// failures, each logged by its kind with `--failures-detailed`, one line per transaction done
/// or failed.
fn failures_detailed(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "txn_log_fail")?;
    let script = env.path("txn-log-conflict.sql");
    std::fs::write(
        &script,
        "BEGIN ISOLATION LEVEL REPEATABLE READ;\nUPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\nSELECT pg_sleep(0.002);\nEND;\n",
    )
    .map_err(|e| e.to_string())?;
    let script = script.display().to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = format!("--log-prefix={}/failures", dir.path().display());
    // More failures than transactions done: the run says so with exit code 1.
    let json = env.path("txn_log_fail.json");
    let json = json.display().to_string();
    let out = dbduel(&[
        "run",
        &script,
        "--dsn",
        &dsn,
        "-c",
        "4",
        "-T",
        "2",
        "-l",
        "--failures-detailed",
        &prefix,
        "--json",
        &json,
    ]);
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!("exit {:?}: {}", out.status.code(), text(&out)));
    }
    let r = crate::env::read_result(Path::new(&json))?;
    let lines = columns(dir.path(), "failures")?;
    let failed = lines.iter().filter(|l| l[2] == "serialization").count() as u64;
    let errors = r["errors_by_kind"]["serialization"].as_u64().unwrap_or(0);
    ensure(
        errors > 0
            && failed == errors
            && lines.len() as u64 == r["transactions"].as_u64().unwrap_or(0) + errors
            && !lines.iter().any(|l| l[2] == "failed"),
        || {
            format!(
                "{errors} serialization errors, {failed} logged, {} lines",
                lines.len()
            )
        },
    )
}

/// `-j 2 -c 4 -t 5`: two files, `PREFIX.PID` and `PREFIX.PID.1`, as pgbench names a thread's;
/// clients 0 and 2 in the first, 1 and 3 in the second, each client's transactions numbered 1
/// to 5 in its file.
fn by_thread(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Sqlite, "txn_log_threads")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prefix = format!("--log-prefix={}/by_thread", dir.path().display());
    let out = dbduel(&[
        "run", "tpcb", "--dsn", &dsn, "-S", "-t", "5", "-c", "4", "-j", "2", "-l", &prefix,
    ]);
    expect_code(&out, 0, "log by thread")?;
    let mut files = logs(dir.path(), "by_thread")?;
    files.sort();
    let pid = files
        .first()
        .and_then(|(n, _)| n.strip_prefix("by_thread."))
        .unwrap_or("")
        .to_string();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    ensure(
        names == [format!("by_thread.{pid}"), format!("by_thread.{pid}.1")],
        || format!("log files {names:?}"),
    )?;
    for (i, (name, lines)) in files.iter().enumerate() {
        let mut by_client: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
        for l in lines {
            let f: Vec<&str> = l.split(' ').collect();
            let client: u32 = f[0].parse().map_err(|_| format!("{name}: {l:?}"))?;
            by_client.entry(client).or_default().push(f[1].to_string());
        }
        let clients: Vec<u32> = by_client.keys().copied().collect();
        let want: Vec<u32> = vec![i as u32, i as u32 + 2];
        let numbered = by_client
            .values()
            .all(|n| *n == (1..=5).map(|k| k.to_string()).collect::<Vec<_>>());
        ensure(clients == want && numbered, || {
            format!("{name}: clients {clients:?}, numbers {by_client:?}")
        })?;
    }
    Ok(())
}
