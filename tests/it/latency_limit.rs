//! `-L` (pgbench's latency limit) on SQLite with transactions of a known length (a script's
//! `\sleep`): in an open loop that cannot keep up, a transaction already later than the limit
//! when its turn comes is skipped and never sent, so no started transaction lags its schedule
//! by more than the limit, and the skipped ones are not counted started; late transactions are
//! those slower than the limit; pgbench's own test case (`-t 10 --rate=100000
//! --latency-limit=1` over a 2 ms sleep: at most one processed) holds; the summary says both as
//! pgbench counts them; a limit of 0 is refused; with two scripts each skipped transaction
//! counts against the script drawn for it, in the JSON, in pgbench's per-script lines and in the
//! per-transaction log's skipped lines.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, text};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    crate::env::trials_of(
        env,
        "latency_limit",
        [
            (
                "open_loop_skips_what_is_already_late",
                skips as crate::env::Test,
            ),
            ("pgbench_late_throttling_case", pgbench_case),
            ("closed_loop_counts_late_only", closed_loop),
            ("refused_without_a_positive_limit", refused),
            ("skipped_counted_by_script", by_script),
        ],
    )
}

/// A script of one `\sleep MS ms` and a `SELECT 1`, and a fresh SQLite database.
fn sleeper(env: &Env, name: &str, ms: u32) -> Result<(String, String), String> {
    let path = env.path(&format!("{name}.sql"));
    std::fs::write(&path, format!("\\sleep {ms} ms\nSELECT 1;\n")).map_err(|e| e.to_string())?;
    Ok((
        path.display().to_string(),
        env.fresh_db(Target::Sqlite, name),
    ))
}

/// `dbduel run` with `args` and `--json`: the result and what it printed.
fn run(env: &Env, name: &str, args: &[&str]) -> Result<(serde_json::Value, String), String> {
    crate::env::run_json_said(env, name, args, 0)
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(u64::MAX)
}

/// One client of 20 ms transactions asked for 100 a second with a 30 ms limit: it keeps up
/// with half at most, so more than a third are skipped; every started one began within the
/// limit of its schedule (the lag's maximum), the schedule counts the skipped as not started,
/// and the summary prints both lines.
fn skips(env: &Env) -> Result<(), String> {
    let (script, dsn) = sleeper(env, "limit_skips", 20)?;
    let (r, said) = run(
        env,
        "limit_skips",
        &[
            "run", &script, "--dsn", &dsn, "-c", "1", "-R", "100", "-L", "30", "-T", "2",
        ],
    )?;
    let l = &r["latency_limit"];
    let (done, skipped, late) = (n(&r["transactions"]), n(&l["skipped"]), n(&l["late"]));
    ensure(
        l["limit_ms"] == 30.0 && skipped > 60 && skipped < 200 && late <= done,
        || format!("latency_limit {l}, transactions {done}"),
    )?;
    let lag_max = r["schedule_lag_ms"]["max"].as_f64().unwrap_or(f64::MAX);
    ensure(lag_max <= 35.0, || {
        format!("a transaction started {lag_max} ms after its schedule, past the 30 ms limit")
    })?;
    let open = &r["open_loop"];
    ensure(n(&open["started"]) + skipped <= n(&open["due"]), || {
        format!("the schedule {open} counts skipped transactions ({skipped}) as started")
    })?;
    ensure(
        said.contains(&format!("of {done} above the 30.0 ms latency limit"))
            && said.contains("later than the limit when their turn came, not sent"),
        || format!("the summary:\n{said}"),
    )
}

/// PostgreSQL's pgbench test "pgbench late throttling": ten transactions of a 2 ms sleep at
/// 100,000 a second with a 1 ms limit: at most one is processed, the others skipped, and at
/// most one is late.
fn pgbench_case(env: &Env) -> Result<(), String> {
    let (script, dsn) = sleeper(env, "limit_pgbench", 2)?;
    let (r, _) = run(
        env,
        "limit_pgbench",
        &[
            "run",
            &script,
            "--dsn",
            &dsn,
            "-t",
            "10",
            "--rate=100000",
            "--latency-limit=1",
        ],
    )?;
    let l = &r["latency_limit"];
    let done = n(&r["transactions"]);
    ensure(
        done <= 1 && done + n(&l["skipped"]) == 10 && n(&l["late"]) <= 1,
        || format!("transactions {done}, latency_limit {l}"),
    )
}

/// A closed loop: 20 ms transactions against a 10 ms limit are all late, and nothing is
/// skipped (there is no schedule to fall behind).
fn closed_loop(env: &Env) -> Result<(), String> {
    let (script, dsn) = sleeper(env, "limit_closed", 20)?;
    let (r, said) = run(
        env,
        "limit_closed",
        &["run", &script, "--dsn", &dsn, "-t", "5", "-L", "10"],
    )?;
    let l = &r["latency_limit"];
    ensure(
        n(&r["transactions"]) == 5 && n(&l["late"]) == 5 && l.get("skipped").is_none(),
        || format!("latency_limit {l}"),
    )?;
    ensure(
        said.contains("5  of 5 above the 10.0 ms latency limit (100.000%)")
            && !said.contains("skipped"),
        || format!("the summary:\n{said}"),
    )
}

fn refused(env: &Env) -> Result<(), String> {
    let (script, dsn) = sleeper(env, "limit_refused", 1)?;
    for bad in ["0", "-5", "NaN", "1e300", "inf"] {
        let flag = format!("--latency-limit={bad}");
        let out = dbduel(&["run", &script, "--dsn", &dsn, "-t", "1", &flag]);
        expect_code(&out, 2, &flag)?;
        ensure(
            text(&out).contains("give the latency limit in milliseconds, more than 0"),
            || text(&out),
        )?;
    }
    Ok(())
}

/// Two scripts by weight, 3 to 1, a slow one (20 ms) and a fast one (1 ms), one client at 100 a
/// second with a 30 ms limit: the skipped transactions are split between the scripts, their sum
/// the run's skipped; pgbench's per-script lines say each script's share; the log's skipped
/// lines name the script drawn, in the same numbers.
fn by_script(env: &Env) -> Result<(), String> {
    let (slow, dsn) = sleeper(env, "limit_by_script", 20)?;
    let fast = env.path("limit_fast.sql");
    std::fs::write(&fast, "\\sleep 1 ms\nSELECT 1;\n").map_err(|e| e.to_string())?;
    let prefix = env.path("limit_by_script_log").display().to_string();
    let (r, said) = run(
        env,
        "limit_by_script",
        &[
            "run",
            "-f",
            &format!("{slow}@3"),
            "-f",
            &format!("{}@1", fast.display()),
            "--dsn",
            &dsn,
            "-c",
            "1",
            "-R",
            "100",
            "-L",
            "30",
            "-T",
            "2",
            "-l",
            "--log-prefix",
            &prefix,
        ],
    )?;
    let types = r["transaction_types"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let each: Vec<u64> = types.iter().map(|t| n(&t["skipped"])).collect();
    let total = n(&r["latency_limit"]["skipped"]);
    ensure(
        each.len() == 2 && each.iter().sum::<u64>() == total && each[0] > 0 && each[1] > 0,
        || format!("skipped by script {each:?}, in all {total}"),
    )?;
    for (i, t) in types.iter().enumerate() {
        let all = n(&t["transactions"]) + n(&t["errors"]) + each[i];
        let line = format!(
            " - number of transactions skipped: {} ({:.3}%)",
            each[i],
            100.0 * each[i] as f64 / all as f64
        );
        ensure(said.contains(&line), || format!("{line:?} in:\n{said}"))?;
    }
    ensure(
        said.contains(" - weight: 3 (targets 75.0% of total)"),
        || said.clone(),
    )?;
    // The log: `client_id transaction_no skipped script_no time_epoch time_us lag`.
    let mut logged = [0u64; 2];
    for entry in std::fs::read_dir(env.path("")).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if !path.display().to_string().starts_with(&prefix) {
            continue;
        }
        for line in std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())?
            .lines()
        {
            let f: Vec<&str> = line.split(' ').collect();
            if f.get(2) == Some(&"skipped") {
                let script: usize = f[3]
                    .parse()
                    .map_err(|_| format!("script number in {line:?}"))?;
                logged[script] += 1;
            }
        }
    }
    ensure(logged.to_vec() == each, || {
        format!("the log's skipped lines by script {logged:?}, the result's {each:?}")
    })
}
