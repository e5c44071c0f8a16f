//! What a run's result and summary say about how it ran: the isolation level its transactions
//! ran at (and Firebird's page size and lock wait), sysbench's options and the storage engine read from the
//! data, and whether its commits were durable, judged from the settings read back.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, prepared_tpcb, read_result, run_json_said,
    text, trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 4] = [
        (
            "isolation_and_firebird_page_size_recorded",
            isolation_recorded,
        ),
        (
            "sysbench_options_and_table_engine_recorded",
            sysbench_recorded,
        ),
        ("summary_states_durability", summary_durability),
        ("durability_counts_what_a_script_sets", script_durability),
    ];
    trials_of(env, "recorded", tests)
}

/// Every result names the isolation level its transactions ran at (the session's, not the
/// server's default among the settings), the summary prints it, and a Firebird database that
/// dbduel creates has 16 KiB pages, recorded with the result, as is whether its transactions
/// wait on locks (`?lock_wait=nowait`, or for how long: `?lock_wait=7`).
fn isolation_recorded(env: &Env) -> Result<(), String> {
    let cases = [
        (Target::Sqlite, "", "serializable"),
        (Target::Postgres, "", "read committed"),
        (Target::MariaDb("InnoDB"), "", "repeatable read"),
        (Target::Firebird, "", "snapshot"),
        (
            Target::Firebird,
            "?isolation=read_committed",
            "read committed",
        ),
        (Target::Firebird, "?lock_wait=nowait", "snapshot"),
        (Target::Firebird, "?lock_wait=7", "snapshot"),
    ];
    for (i, (target, param, level)) in cases.into_iter().enumerate() {
        let dsn = prepared_tpcb(env, target, "isolation")? + param;
        let mut args = vec!["run", "tpcb", "--dsn", &dsn, "-t", "20"];
        let flags = target.flags();
        args.extend(flags.iter().map(String::as_str));
        let json = env.path(&format!("isolation-{i}.json"));
        let json_s = json.display().to_string();
        args.extend(["--json", &json_s]);
        let out = dbduel(&args);
        expect_code(&out, 0, &target.label())?;
        ensure(
            text(&out).contains(&format!("isolation: {level} (")),
            || {
                format!(
                    "{}: the summary does not say '{level}':\n{}",
                    target.label(),
                    text(&out)
                )
            },
        )?;
        let r = read_result(&json)?;
        ensure(r["engine"]["isolation"] == level, || {
            format!(
                "{}{param}: engine.isolation {}",
                target.label(),
                r["engine"]["isolation"]
            )
        })?;
        if let Target::Firebird = target {
            let page = &r["engine"]["settings"]["page_size"];
            ensure(page == "16384", || {
                format!("Firebird page size {page}, not 16384")
            })?;
            // Read back from the server (MON$TRANSACTIONS), not from the DSN.
            let want = if param.contains("nowait") {
                "nowait"
            } else if param.contains("lock_wait=7") {
                "wait 7 s"
            } else {
                "wait"
            };
            let lock_wait = &r["engine"]["settings"]["lock_wait"];
            ensure(lock_wait == want, || {
                format!("Firebird{param}: lock_wait {lock_wait}, not {want}")
            })?;
        }
    }
    Ok(())
}

/// A sysbench run records every option in effect and the storage engine its tables are in
/// (read from the data: prepared as Aria, run without --table-engine), and shows no "scale",
/// which means nothing to sysbench.
fn sysbench_recorded(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::MariaDb("Aria"), "sysbench_recorded");
    let prepare = dbduel(&[
        "prepare",
        "oltp_read_only",
        "--dsn",
        &dsn,
        "--tables",
        "2",
        "--table-size",
        "500",
        "--table-engine",
        "Aria",
    ]);
    expect_code(&prepare, 0, "prepare")?;
    ensure(!text(&prepare).contains("scale"), || text(&prepare))?;
    let json = env.path("sysbench-recorded.json");
    let json_s = json.display().to_string();
    let args = [
        "run",
        "oltp_read_only",
        "--dsn",
        &dsn,
        "-t",
        "20",
        "--rand-type",
        "uniform",
        "--json",
        &json_s,
    ];
    let out = dbduel(&args);
    expect_code(&out, 0, "run")?;
    let summary = text(&out);
    ensure(
        summary.contains("oltp_read_only, 2 tables of 500 rows, on mysql")
            && !summary.contains("scale"),
        || format!("the summary's header:\n{summary}"),
    )?;
    let r = read_result(&json)?;
    let s = &r["workload"]["settings"];
    ensure(
        s["tables"] == "2"
            && s["table_size"] == "500"
            && s["rand_type"] == "uniform"
            && s["point_selects"] == "10"
            && s["range_size"] == "100",
        || format!("workload settings: {s}"),
    )?;
    ensure(r["workload"]["scale"].is_null(), || {
        format!("scale: {}", r["workload"]["scale"])
    })?;
    ensure(r["options"]["table_engine"] == "Aria", || {
        format!("table_engine: {}", r["options"]["table_engine"])
    })
}

/// A script that turns durability off in its own sessions is not durable, however the server is
/// set: SQLite's `PRAGMA synchronous = OFF` on a database opened with synchronous=FULL is
/// UNSAFE, naming the script's line, in the summary and the JSON (PostgreSQL's `SET
/// synchronous_commit = off`: `verdicts::durable_runs`, on a server that syncs).
fn script_durability(env: &Env) -> Result<(), String> {
    let dsn = format!(
        "{}?synchronous=full",
        env.fresh_db(Target::Sqlite, "script_durability")
    );
    let script = env.path("durability-sqlite.sql");
    std::fs::write(&script, "PRAGMA synchronous = OFF;\nSELECT 1;\n").map_err(|e| e.to_string())?;
    let script = script.display().to_string();
    let args = ["run", &script, "--dsn", &dsn, "-t", "20"];
    let (r, said) = run_json_said(env, "durability-sqlite", &args, 0)?;
    ensure(
        said.contains("durability: UNSAFE: ") && said.contains("set by durability-sqlite.sql:1"),
        || format!("no UNSAFE durability naming the script's line:\n{said}"),
    )?;
    let level = &r["engine"]["durability"]["level"];
    ensure(level == "unsafe", || format!("the result says {level}"))
}

/// The summary says what the measured commits were worth, judged from the settings read back:
/// SQLite's WAL with synchronous=FULL is durable, NORMAL not durable, OFF UNSAFE.
fn summary_durability(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "durability");
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    for (sync, said) in [
        (
            "full",
            "durability: durable (judged from the server settings read back)",
        ),
        ("normal", "durability: not durable: "),
        ("off", "durability: UNSAFE: "),
    ] {
        let with = format!("{dsn}?synchronous={sync}");
        let out = dbduel(&["run", "tpcb", "--dsn", &with, "-T", "1"]);
        expect_code(&out, 0, &format!("run with synchronous={sync}"))?;
        ensure(text(&out).contains(said), || {
            format!("synchronous={sync}: no `{said}` line:\n{}", text(&out))
        })?;
    }
    Ok(())
}
