//! A client's session through what a run throws at it: SQLite's conflicts retried with no busy
//! wait, connections the server ends made again, statements timed out by the server or by
//! dbduel (SQLite, Firebird) with the session going on, cancels that land late on Firebird,
//! more prepared statements than MariaDB's driver caches, a run whose every transaction
//! fails the same way stopped (one that fails only sometimes is not), and PostgreSQL's wait
//! sampler's prepared query, and its text in place of one the server no longer has.

use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, prepared_tpcb, read_result, run_json, text,
    trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 8] = [
        (
            "sqlite_contention_is_retried_and_correct",
            sqlite_contention,
        ),
        ("lost_connections_reconnect", reconnect),
        ("statement_timeout_is_the_servers", statement_timeout),
        (
            "statement_timeout_kept_by_the_client",
            statement_timeout_kept_by_the_client,
        ),
        (
            "firebird_session_after_a_stray_cancel",
            firebird_stray_cancels,
        ),
        ("many_prepared_statements_on_mariadb", many_statements),
        ("every_transaction_failing_alike_stops", failing_alike),
        (
            "postgres_sampler_prepared_then_text",
            sampler_prepared_then_text,
        ),
    ];
    trials_of(env, "sessions", tests)
}

fn sqlite_contention(env: &Env) -> Result<(), String> {
    let file = env.path("contention.db");
    let dsn = format!("sqlite://{}", file.display());
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    // No busy wait at all: every collision is an immediate SQLITE_BUSY, retried.
    let busy = format!("{dsn}?busy_timeout=0");
    let json = env.path("contention.json");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &busy,
        "-c",
        "8",
        "-T",
        "2",
        "--max-tries",
        "1000",
        "--json",
        &json.display().to_string(),
    ]);
    let r = read_result(&json)?;
    ensure(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        || text(&out),
    )?;
    ensure(r["retries"].as_u64() > Some(0), || {
        format!(
            "8 writers with no busy timeout never retried: {}",
            r["errors_by_kind"]
        )
    })?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check after contention",
    )
}

fn reconnect(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "reconnect")?;
    let db = dsn.rsplit('/').next().unwrap_or_default().to_string();
    let killer = {
        let mut admin = env.admin(Target::Postgres);
        std::thread::spawn(move || {
            // Wait for both clients' sessions (a loaded machine may take seconds to start
            // the run), then let them work half a second before terminating them.
            let sessions = format!(
                "FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid() AND application_name = 'dbduel'"
            );
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while std::time::Instant::now() < deadline
                && admin.query_text(&format!("SELECT pid {sessions}"))?.len() < 2
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(500));
            admin
                .query_text(&format!("SELECT pg_terminate_backend(pid) {sessions}"))
                .map(|rows| rows.len())
        })
    };
    let r = run_json(
        env,
        "reconnect",
        &["run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "4"],
        1,
    )?;
    let killed = killer
        .join()
        .map_err(|_| "killer panicked".to_string())?
        .map_err(|e| e.message)?;
    ensure(killed >= 2, || {
        format!("only {killed} sessions were terminated")
    })?;
    ensure(r["reconnects"].as_u64() >= Some(1), || {
        format!("reconnects: {}", r["reconnects"])
    })?;
    ensure(
        r["errors_by_kind"]["connection_lost"].as_u64() >= Some(1),
        || format!("errors: {}", r["errors_by_kind"]),
    )?;
    ensure(
        r["windows"].as_array().is_some_and(|w| {
            w.last()
                .is_some_and(|w| w["transactions"].as_u64() > Some(0))
        }),
        || "clients did not resume".into(),
    )?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check after reconnects",
    )
}

/// `--statement-timeout` sets the server's own limit: a statement past it is cancelled by the
/// server and counted as a statement_timeout error.
fn statement_timeout(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "stmt_timeout");
    let script = env.path("sleep.sql");
    std::fs::write(&script, "SELECT pg_sleep(3);\n").map_err(|e| e.to_string())?;
    let script = script.display().to_string();
    let started = std::time::Instant::now();
    let r = run_json(
        env,
        "stmt_timeout",
        &[
            "run",
            &script,
            "--dsn",
            &dsn,
            "-t",
            "1",
            "--statement-timeout",
            "0.3",
        ],
        1,
    )?;
    ensure(
        started.elapsed() < std::time::Duration::from_secs(3),
        || "the statement ran past its timeout".into(),
    )?;
    ensure(r["errors_by_kind"]["statement_timeout"] == 1, || {
        format!("errors: {}", r["errors_by_kind"])
    })?;
    // The server's own words are kept with the count.
    ensure(
        r["error_messages"]["statement_timeout"]
            .as_str()
            .is_some_and(|m| m.contains("statement timeout") && m.contains("57014")),
        || format!("messages: {}", r["error_messages"]),
    )?;
    ensure(
        r["options"]["statement_timeout_s"].as_f64() == Some(0.3),
        || format!("options: {}", r["options"]),
    )?;
    Ok(())
}

/// SQLite and Firebird 3 have no statement timeout of their own: dbduel keeps it (SQLite's
/// progress handler; a cancel through MON$STATEMENTS on Firebird). A statement that would run
/// for minutes ends soon after the limit, is counted as a statement_timeout error with the
/// engine's words, and the session goes on: the next transaction's quick statement succeeds.
fn statement_timeout_kept_by_the_client(env: &Env) -> Result<(), String> {
    let slow = [
        (
            Target::Sqlite,
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) FROM c",
            "interrupted",
        ),
        (
            Target::Firebird,
            "SELECT COUNT(*) FROM RDB$FIELDS a CROSS JOIN RDB$FIELDS b CROSS JOIN RDB$FIELDS c CROSS JOIN RDB$FIELDS d",
            "operation was cancelled",
        ),
    ];
    for (target, sql, words) in slow {
        let label = target.label();
        let dsn = env.fresh_db(target, &format!("stmt_timeout_{label}"));
        let script = env.path(&format!("slow-{label}.sql"));
        // Each transaction runs a quick statement, then the slow one: after a cancel, the
        // session must still answer the next transaction's quick statement.
        let one = if matches!(target, Target::Firebird) {
            " FROM RDB$DATABASE"
        } else {
            ""
        };
        let text_of = format!("SELECT 1{one};\n{sql};\n");
        std::fs::write(&script, text_of).map_err(|e| e.to_string())?;
        let script = script.display().to_string();
        let started = std::time::Instant::now();
        let r = run_json(
            env,
            &format!("stmt_timeout_{label}"),
            &[
                "run",
                &script,
                "--dsn",
                &dsn,
                "-t",
                "3",
                "--statement-timeout",
                "0.5",
            ],
            1,
        )?;
        let took = started.elapsed();
        ensure(r["errors_by_kind"]["statement_timeout"] == 3, || {
            format!("{label}: errors {}", r["errors_by_kind"])
        })?;
        ensure(took < std::time::Duration::from_secs(10), || {
            format!("{label}: three statements past 0.5 s took {took:?} in all")
        })?;
        ensure(
            r["error_messages"]["statement_timeout"]
                .as_str()
                .is_some_and(|m| m.contains("statement timeout") && m.contains(words)),
            || format!("{label}: messages: {}", r["error_messages"]),
        )?;
    }
    Ok(())
}

/// pgbench's tpcb-like script on Firebird with a statement timeout of 3 ms, so that cancels
/// (a row of MON$STATEMENTS deleted from another attachment) land on every kind of call,
/// some after their statement ended, on the deferred free of a statement that rsfbclient
/// reads in place of the next call's own answer. The session must not go on out of step with
/// the server (statements on stale transaction handles: "invalid transaction handle",
/// "Invalid Xsqlda"): it attaches again; and every transaction stays whole (`check`).
fn firebird_stray_cancels(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Firebird, "fb_stray_cancels")?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("bench/scripts/tpcb-like.sql")
        .display()
        .to_string();
    let json = env.path("fb_stray_cancels.json");
    let out = dbduel(&[
        "run",
        &script,
        "--dsn",
        &dsn,
        "-c",
        "8",
        "-T",
        "5",
        "--statement-timeout",
        "0.003",
        "--json",
        &json.display().to_string(),
    ]);
    let r = read_result(&json).map_err(|e| format!("{e}\n{}", text(&out)))?;
    let messages = r["error_messages"].to_string().to_lowercase();
    ensure(
        !messages.contains("invalid transaction handle")
            && !messages.contains("invalid xsqlda")
            && !messages.contains("invalid statement handle"),
        || format!("a session went on out of step: {}", r["error_messages"]),
    )?;
    ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
        format!("nothing committed: {}", text(&out))
    })?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check after stray cancels",
    )
}

/// Eight sbtest tables are 72 prepared statements per session, more than the driver caches.
fn many_statements(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::MariaDb("InnoDB"), "many");
    let out = dbduel(&[
        "prepare",
        "oltp_read_only",
        "--dsn",
        &dsn,
        "--tables",
        "8",
        "--table-size",
        "200",
    ]);
    expect_code(&out, 0, "prepare")?;
    let r = run_json(
        env,
        "many",
        &[
            "run",
            "oltp_read_only",
            "--dsn",
            &dsn,
            "-c",
            "2",
            "-T",
            "1",
            "-M",
            "prepared",
        ],
        0,
    )?;
    ensure(
        r["errors"] == 0 && r["transactions"].as_u64() > Some(0),
        || format!("{}", r["errors_by_kind"]),
    )
}

/// A script whose every transaction meets a missing table, on PostgreSQL and SQLite, with
/// -T 30: stopped after about 3 s with one line that names the error, exit 1, the result
/// written with its errors; a script that fails only sometimes is not stopped.
fn failing_alike(env: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let script = dir.path().join("missing.sql");
    std::fs::write(&script, "SELECT * FROM no_such_table;\n").map_err(|e| e.to_string())?;
    let script = script.display().to_string();
    for target in [Target::Postgres, Target::Sqlite] {
        let dsn = env.fresh_db(target, "failing_alike");
        let json = dir.path().join("r.json").display().to_string();
        let started = std::time::Instant::now();
        let out = dbduel(&[
            "run", &script, "--dsn", &dsn, "-c", "2", "-T", "30", "--json", &json,
        ]);
        let took = started.elapsed();
        expect_code(&out, 1, "a run whose every transaction fails alike")?;
        let said = text(&out);
        ensure(
            took < Duration::from_secs(15)
                && said.contains("failed the same way (undefined_table")
                && said.contains("so the run was stopped"),
            || format!("{target:?}: stopped in {took:?}?\n{said}"),
        )?;
        let r = read_result(std::path::Path::new(&json))?;
        ensure(
            r["errors"].as_u64().unwrap_or(0) > 0 && r["transactions"] == 0,
            || format!("{target:?}: the result keeps its errors: {}", r["errors"]),
        )?;
    }
    // Half the transactions fail, the other half commit: a measurement, not a fault.
    let dsn = prepared_tpcb(env, Target::Sqlite, "failing_sometimes")?;
    let sometimes = dir.path().join("sometimes.sql");
    // abs() of the smallest integer overflows: an error on every other transaction.
    std::fs::write(
        &sometimes,
        "\\set id random(1, 2)\nSELECT abs(-9223372036854775808 * (:id - 1)) FROM pgbench_branches;\n",
    )
    .map_err(|e| e.to_string())?;
    let json = dir.path().join("some.json").display().to_string();
    let some = sometimes.display().to_string();
    let out = dbduel(&["run", &some, "--dsn", &dsn, "-T", "4", "--json", &json]);
    let said = text(&out);
    let r = read_result(std::path::Path::new(&json))?;
    ensure(
        !said.contains("so the run was stopped")
            && r["errors"].as_u64().unwrap_or(0) > 0
            && r["transactions"].as_u64().unwrap_or(0) > 0
            && r["duration_s"].as_f64().is_some_and(|d| d >= 4.0),
        || format!("a run that commits is never stopped:\n{said}"),
    )
}

/// PostgreSQL's wait sampler prepares its query on the server at its first sample and executes
/// it after; when the server no longer has it (a pooler's other connection: here DEALLOCATE),
/// the next sample sends the text and sees the same sessions.
fn sampler_prepared_then_text(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "sampler_prepared");
    let mut sampler = crate::env::session(&dsn);
    let mut other = crate::env::session(&dsn);
    // Another session of the run (dbduel's application name) inside a transaction.
    other.batch("BEGIN").map_err(|e| e.to_string())?;
    other.query_text("SELECT 1").map_err(|e| e.to_string())?;
    let seen = |s: &mut Box<dyn dbduel::engine::Session>| -> Result<usize, String> {
        Ok(s.activity()
            .map_err(|e| e.to_string())?
            .map_or(0, |a| a.len()))
    };
    let first = seen(&mut sampler)?;
    let prepared = sampler
        .query_text("SELECT count(*) FROM pg_prepared_statements WHERE name = 'dbduel_activity'")
        .map_err(|e| e.to_string())?;
    ensure(first == 1 && prepared[0][0].as_i64() == Some(1), || {
        format!("first sample: {first} sessions, prepared {prepared:?}")
    })?;
    sampler
        .batch("DEALLOCATE dbduel_activity")
        .map_err(|e| e.to_string())?;
    let again = seen(&mut sampler)?;
    let after = seen(&mut sampler)?;
    ensure(again == 1 && after == 1, || {
        format!("after DEALLOCATE: {again}, then {after} sessions")
    })
}
