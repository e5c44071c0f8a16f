//! Behaviour a user relies on: check catches a half-applied transaction, Ctrl-C keeps a partial
//! result, the open loop paces, retries and reconnects are counted, warm-up is excluded, the
//! default run needs no server, pgbench-made databases work, passwords stay out of results.

use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, session, text};

type Test = fn(&Env) -> Result<(), String>;

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut tests: Vec<(String, Test)> = vec![
        ("default_run_on_temporary_sqlite".into(), default_run),
        ("pgbench_and_sysbench_habits".into(), habits),
        ("summary_states_durability".into(), summary_durability),
        (
            "every_transaction_failing_alike_stops".into(),
            failing_alike,
        ),
        ("completions_and_man_page".into(), completions_and_man),
        (
            "firebird_session_after_a_stray_cancel".into(),
            firebird_stray_cancels,
        ),
        (
            "dockerfile_builds_the_image_deploy_names".into(),
            dockerfile,
        ),
        ("ctrl_c_keeps_partial_result".into(), ctrl_c),
        ("open_loop_paces_and_reports_lag".into(), open_loop),
        ("transactions_per_client".into(), transactions_limit),
        ("warmup_is_excluded".into(), warmup),
        (
            "sqlite_contention_is_retried_and_correct".into(),
            sqlite_contention,
        ),
        ("lost_connections_reconnect".into(), reconnect),
        (
            "runs_on_a_pgbench_initialised_database".into(),
            pgbench_made,
        ),
        ("password_stays_out_of_results".into(), password_hidden),
        ("list_names_engines_and_workloads".into(), list),
        (
            "isolation_and_firebird_page_size_recorded".into(),
            isolation_recorded,
        ),
        (
            "sysbench_options_and_table_engine_recorded".into(),
            sysbench_recorded,
        ),
        ("nothing_measured_exits_1".into(), nothing_measured),
        (
            "spec_timing_shorter_than_keying_warns".into(),
            spec_timing_short,
        ),
        ("closed_pipe_ends_quietly".into(), closed_pipe),
        ("json_checked_before_the_run".into(), json_unwritable),
        ("statement_timeout_is_the_servers".into(), statement_timeout),
        (
            "statement_timeout_kept_by_the_client".into(),
            statement_timeout_kept_by_the_client,
        ),
        (
            "sysbench_tables_found_without_dbduel_factsdata".into(),
            sysbench_made,
        ),
        (
            "many_prepared_statements_on_mariadb".into(),
            many_statements,
        ),
    ];
    for (label, t) in [
        ("sqlite", half_applied_sqlite as Test),
        ("postgres", half_applied_pg),
        ("mariadb", half_applied_maria),
    ] {
        tests.push((
            format!("check_fails_on_half_applied_transaction::{label}"),
            t,
        ));
    }
    for (label, t) in [
        ("sqlite", broken_index_sqlite as Test),
        ("postgres", broken_index_pg),
    ] {
        tests.push((format!("check_fails_on_inconsistent_index::{label}"), t));
    }
    tests
        .into_iter()
        .map(|(name, f)| {
            let env = env.clone();
            Trial::test(format!("behaviour::{name}"), move || Ok(f(&env)?))
        })
        .collect()
}

fn prepared(env: &Env, target: Target, name: &str) -> Result<String, String> {
    let dsn = env.fresh_db(target, name);
    expect_code(&dbduel(&["prepare", "tpcb", "--dsn", &dsn]), 0, "prepare")?;
    Ok(dsn)
}

fn run_json(env: &Env, name: &str, args: &[&str], code: i32) -> Result<serde_json::Value, String> {
    let json = env.path(&format!("{name}.json"));
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(["--json".into(), json.display().to_string()]);
    expect_code(&dbduel(&all), code, name)?;
    read_result(&json)
}

/// Every result names the isolation level its transactions ran at (the session's, not the
/// server's default among the settings), the summary prints it, and a Firebird database that
/// dbduel creates has 16 KiB pages, recorded with the result.
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
    ];
    for (i, (target, param, level)) in cases.into_iter().enumerate() {
        let dsn = prepared(env, target, "isolation")? + param;
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

fn default_run(env: &Env) -> Result<(), String> {
    let r = run_json(env, "default", &["run", "tpcb", "-T", "2"], 0)?;
    ensure(
        r["engine"]["name"] == "sqlite" && r["transactions"].as_u64() > Some(0),
        || format!("{r}"),
    )?;
    ensure(
        r["options"]["clients"] == 1 && r["workload"]["scale"] == 1,
        || format!("{}", r["options"]),
    )
}

fn ctrl_c(env: &Env) -> Result<(), String> {
    let json = env.path("interrupted.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "tpcb", "-T", "60", "-c", "2", "-P", "1", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Ctrl-C once the run measures (its first progress line), however long the temporary
    // database took to prepare on a loaded machine.
    let stderr = child.stderr.take().expect("stderr");
    let (measuring, seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("tps") {
                let _ = measuring.send(());
            }
            all += &line;
            all.push('\n');
        }
        all
    });
    let measured = seen.recv_timeout(Duration::from_secs(120)).is_ok();
    // SAFETY: signals the child we just started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let stderr = reader.join().unwrap_or_default();
    ensure(measured, || {
        format!("no progress line within 120 s:\n{stderr}")
    })?;
    let summary = format!("{}{stderr}", String::from_utf8_lossy(&out.stdout));
    ensure(out.status.code() == Some(130), || {
        format!("interrupted run exited {:?}:\n{summary}", out.status.code())
    })?;
    ensure(summary.contains("INTERRUPTED"), || {
        format!("summary not marked:\n{summary}")
    })?;
    let r = read_result(&json)?;
    ensure(r["interrupted"] == true, || {
        "result not marked interrupted".into()
    })?;
    ensure(r["transactions"].as_u64() > Some(0), || {
        "partial result lost its transactions".into()
    })?;
    ensure(r["duration_s"].as_f64() < Some(20.0), || {
        "the run did not stop".into()
    })
}

fn open_loop(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::Postgres, "rate")?;
    let r = run_json(
        env,
        "rate",
        &[
            "run", "tpcb", "--dsn", &dsn, "-S", "-c", "2", "-T", "3", "-R", "200",
        ],
        0,
    )?;
    let tps = r["tps"].as_f64().unwrap_or(0.0);
    ensure((150.0..=250.0).contains(&tps), || {
        format!("--rate 200 gave {tps} tps")
    })?;
    ensure(r["schedule_lag_ms"].is_object(), || {
        "no schedule lag in an open-loop result".into()
    })?;
    let (due, started) = (
        r["open_loop"]["due"].as_u64().unwrap_or(0),
        r["open_loop"]["started"].as_u64().unwrap_or(0),
    );
    ensure(due > 0 && started <= due, || {
        format!("open loop: {}", r["open_loop"])
    })?;
    // A rate no client can keep: flagged, and nothing started after the end of -T.
    let sqlite = prepared(env, Target::Sqlite, "rate_unmet")?;
    let r = run_json(
        env,
        "rate_unmet",
        &["run", "tpcb", "--dsn", &sqlite, "-T", "2", "-R", "1000000"],
        0,
    )?;
    let (due, started) = (
        r["open_loop"]["due"].as_u64().unwrap_or(0),
        r["open_loop"]["started"].as_u64().unwrap_or(0),
    );
    ensure(due > 1_000_000 && started < due / 2, || {
        format!("open loop: {}", r["open_loop"])
    })?;
    // -T, stretched at most by the one transaction in flight at the end.
    let window = r["duration_s"].as_f64().unwrap_or(0.0);
    ensure((2.0..2.1).contains(&window), || format!("window {window}"))?;
    // Past the end, at most the one transaction in flight at the end of -T finishes.
    let late: u64 = r["windows"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter(|w| w["t"].as_u64() > Some(2))
                .map(|w| w["transactions"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0);
    ensure(late <= 1, || {
        format!("{late} transactions ran past the end of -T")
    })?;
    ensure(
        r["warnings"].as_array().is_some_and(|w| {
            w.iter()
                .any(|w| w.as_str().is_some_and(|w| w.starts_with("rate not met")))
        }),
        || format!("warnings: {}", r["warnings"]),
    )
}

/// A run in which no transaction completed measured nothing: exit 1, tps over the whole
/// window (not over nothing), and no client-bound verdict on nothing.
fn nothing_measured(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::Sqlite, "nothing")?;
    // One transaction per 1000 s on average: none is due within two seconds.
    let r = run_json(
        env,
        "nothing",
        &[
            "run", "tpcb", "--dsn", &dsn, "-R", "0.001", "-T", "2", "--seed", "7",
        ],
        1,
    )?;
    ensure(r["transactions"] == 0, || format!("{}", r["transactions"]))?;
    ensure(r["duration_s"].as_f64() == Some(2.0), || {
        format!("measured window: {}", r["duration_s"])
    })?;
    ensure(r["client_bound"] == false, || {
        "client-bound on nothing".into()
    })?;
    ensure(
        r["warnings"].as_array().is_some_and(|w| {
            w.iter()
                .any(|w| w.as_str().is_some_and(|w| w.contains("no transaction")))
        }),
        || format!("warnings: {}", r["warnings"]),
    )
}

/// TPC-C with its keying and think times for 3 s: no New-Order can complete (18 s of keying
/// first); the run says so before anything else, counts its terminals right, and exits 1.
fn spec_timing_short(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "spec_short");
    expect_code(
        &dbduel(&["prepare", "tpcc", "--dsn", &dsn, "-w", "1"]),
        0,
        "prepare",
    )?;
    let json = env.path("spec_short.json");
    let json_s = json.display().to_string();
    let out = dbduel(&[
        "run",
        "tpcc",
        "--dsn",
        &dsn,
        "--spec-timing",
        "-c",
        "2",
        "-T",
        "3",
        "--json",
        &json_s,
    ]);
    let r = read_result(&json)?;
    // A client whose first card is not a New-Order (2-3 s of keying) may finish one
    // transaction; the exit code says whether any did (none measured is a failure).
    let done = r["transactions"].as_u64().unwrap_or(u64::MAX);
    ensure(done <= 2, || format!("{done} transactions in 3 s"))?;
    expect_code(&out, if done == 0 { 1 } else { 0 }, "spec_short")?;
    let warnings = r["warnings"].to_string();
    ensure(
        warnings.contains("with a 3 s run: every New-Order waits 18 s of keying time")
            && warnings.contains("10 for 1 warehouse, where this run has 2 clients")
            && r["client_bound"] == false,
        || format!("warnings: {warnings}"),
    )
}

/// `dbduel list | head -c 0`: the reader goes away before dbduel writes; it ends quietly
/// (SIGPIPE, as Unix tools), never with a panic (exit 101).
fn closed_pipe(_env: &Env) -> Result<(), String> {
    // A pipe whose reading end is closed before dbduel starts: its first write fails.
    let (reader, writer) = std::io::pipe().map_err(|e| e.to_string())?;
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .arg("list")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure(out.status.code() != Some(101) && stderr.is_empty(), || {
        format!("exit {:?}, stderr: {stderr}", out.status)
    })
}

/// `--json` in a place that cannot be written is refused before anything runs.
fn json_unwritable(_env: &Env) -> Result<(), String> {
    let started = std::time::Instant::now();
    let out = dbduel(&["run", "tpcb", "-T", "30", "--json", "/proc/dbduel.json"]);
    expect_code(&out, 2, "--json /proc/dbduel.json")?;
    ensure(text(&out).contains("cannot write there"), || text(&out))?;
    ensure(
        started.elapsed() < std::time::Duration::from_secs(10),
        || "the run went ahead".into(),
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

fn transactions_limit(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::MariaDb("InnoDB"), "tlimit")?;
    let r = run_json(
        env,
        "tlimit",
        &["run", "tpcb", "--dsn", &dsn, "-c", "3", "-t", "40"],
        0,
    )?;
    ensure(r["transactions"] == 120, || {
        format!("3 clients x 40 gave {}", r["transactions"])
    })?;
    expect_code(&dbduel(&["check", "tpcb", "--dsn", &dsn]), 0, "check")
}

fn warmup(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::Postgres, "warmup")?;
    let r = run_json(
        env,
        "warmup",
        &[
            "run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "2", "--warmup", "1",
        ],
        0,
    )?;
    let windows = r["windows"].as_array().cloned().unwrap_or_default();
    ensure(
        windows.first().map(|w| w["warmup"] == true) == Some(true),
        || "first second not marked warm-up".into(),
    )?;
    let measured: u64 = windows
        .iter()
        .filter(|w| w["warmup"] == false)
        .map(|w| w["transactions"].as_u64().unwrap_or(0))
        .sum();
    let total = r["transactions"].as_u64().unwrap_or(0);
    // Windows are whole seconds; the warm-up boundary is exact, so the two agree.
    ensure(measured == total && total > 0, || {
        format!("windows after warm-up hold {measured}, total says {total}")
    })?;
    let d = r["duration_s"].as_f64().unwrap_or(0.0);
    ensure((1.9..2.6).contains(&d), || {
        format!("measured duration {d} s for -T 2 after a 1 s warm-up")
    })
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
    let dsn = prepared(env, Target::Postgres, "reconnect")?;
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

fn pgbench_made(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "pgbench");
    let pgbench = ["/usr/bin/pgbench", "/usr/local/bin/pgbench"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let pgbench = pgbench.ok_or("pgbench not found: install the postgresql package")?;
    let out = std::process::Command::new(pgbench)
        .args(["-i", "-s", "2", "-q", &dsn])
        .output()
        .map_err(|e| e.to_string())?;
    expect_code(&out, 0, "pgbench -i")?;
    let r = run_json(
        env,
        "pgbench_made",
        &["run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "1"],
        0,
    )?;
    ensure(r["workload"]["scale"] == 2, || {
        format!("scale read as {}", r["workload"]["scale"])
    })?;
    expect_code(&dbduel(&["check", "tpcb", "--dsn", &dsn]), 0, "check")
}

fn password_hidden(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::Postgres, "secret")?;
    let password = dsn
        .split("dbduel:")
        .nth(1)
        .and_then(|s| s.split('@').next())
        .unwrap_or_default()
        .to_string();
    let json = env.path("secret.json");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-T",
        "1",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "run")?;
    let saved = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    ensure(password.len() > 8, || "test DSN has no password".into())?;
    ensure(
        !text(&out).contains(&password) && !saved.contains(&password),
        || "the password was printed or saved".into(),
    )?;
    // A plan naming the server in [dsn]: neither the store nor the report keeps the password.
    let plan = env.path("secret-plan.toml");
    std::fs::write(
        &plan,
        format!("engines = [\"postgres\"]\nclients = [1]\ntime = 1\n[dsn]\npostgres = \"{dsn}\"\n"),
    )
    .map_err(|e| e.to_string())?;
    let store = env.path("secret.db");
    let report = env.path("secret.html");
    let out = dbduel(&[
        "sweep",
        &plan.display().to_string(),
        "--results",
        &store.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    expect_code(&out, 0, "sweep")?;
    for file in [&store, &report] {
        let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
        ensure(!String::from_utf8_lossy(&bytes).contains(&password), || {
            format!("{} keeps the password", file.display())
        })?;
    }
    ensure(!text(&out).contains(&password), || {
        "the sweep printed the password".into()
    })
}

fn list(_: &Env) -> Result<(), String> {
    let out = dbduel(&["list"]);
    expect_code(&out, 0, "list")?;
    let all = text(&out);
    ensure(
        ["sqlite", "postgres", "mysql", "tpcb", "select-only"]
            .iter()
            .all(|w| all.contains(w)),
        || all.clone(),
    )
}

/// Apply part of a transaction by hand, then check must fail (exit 1) naming the invariant.
fn half_applied(env: &Env, target: Target) -> Result<(), String> {
    let dsn = prepared(env, target, "half")?;
    expect_code(
        &dbduel(&["run", "tpcb", "--dsn", &dsn, "-T", "1"]),
        0,
        "run",
    )?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check before damage",
    )?;
    // The account moved, the history row was never written.
    session(&dsn)
        .batch("UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid = 1")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&out, 1, "check after a half-applied transaction")?;
    ensure(text(&out).contains("FAILED accounts = history"), || {
        text(&out)
    })?;
    // Repair the accounts, then move a teller alone.
    let mut s = session(&dsn);
    s.batch("UPDATE pgbench_accounts SET abalance = abalance - 7 WHERE aid = 1")
        .map_err(|e| e.message)?;
    s.batch("UPDATE pgbench_tellers SET tbalance = tbalance + 7 WHERE tid = 1")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&out, 1, "check after a teller-only update")?;
    ensure(text(&out).contains("FAILED tellers = branches"), || {
        text(&out)
    })
}

fn half_applied_sqlite(env: &Env) -> Result<(), String> {
    half_applied(env, Target::Sqlite)
}
fn half_applied_pg(env: &Env) -> Result<(), String> {
    half_applied(env, Target::Postgres)
}
fn half_applied_maria(env: &Env) -> Result<(), String> {
    half_applied(env, Target::MariaDb("InnoDB"))
}

/// Tables made by sysbench itself carry no dbduel metadata: dbduel counts them.
fn sysbench_made(env: &Env) -> Result<(), String> {
    let dsn = format!("sqlite://{}", env.path("sysbench-made.db").display());
    let out = dbduel(&[
        "prepare",
        "oltp_read_only",
        "--dsn",
        &dsn,
        "--tables",
        "3",
        "--table-size",
        "500",
    ]);
    expect_code(&out, 0, "prepare")?;
    session(&dsn)
        .batch("DROP TABLE dbduel_facts")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "oltp_read_only", "--dsn", &dsn]);
    expect_code(&out, 0, "check")?;
    let all = text(&out);
    ensure(
        all.contains("sbtest3 shape") && all.contains("500 rows of 500"),
        || all.clone(),
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

/// An index that no longer matches its rows: sysbench's check must fail (exit 1) naming it.
fn broken_index(env: &Env, target: Target, damage: &[&str]) -> Result<(), String> {
    let dsn = env.fresh_db(target, "broken_index");
    let prepare = [
        "prepare",
        "oltp_read_write",
        "--dsn",
        &dsn,
        "--table-size",
        "2000",
    ];
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    expect_code(
        &dbduel(&["check", "oltp_read_write", "--dsn", &dsn]),
        0,
        "check before damage",
    )?;
    let mut s = session(&dsn);
    for sql in damage {
        s.batch(sql).map_err(|e| format!("{sql}: {}", e.message))?;
    }
    drop(s);
    let out = dbduel(&["check", "oltp_read_write", "--dsn", &dsn]);
    expect_code(&out, 1, "check after damaging an index")?;
    ensure(text(&out).contains("FAILED sbtest1 indexes"), || text(&out))
}

/// SQLite: the schema is rewritten to say k_1 indexes c, while its entries hold k.
fn broken_index_sqlite(env: &Env) -> Result<(), String> {
    broken_index(
        env,
        Target::Sqlite,
        &[
            "PRAGMA writable_schema = ON",
            "UPDATE sqlite_schema SET sql = 'CREATE INDEX k_1 ON sbtest1(c)' WHERE name = 'k_1'",
            "PRAGMA writable_schema = OFF",
        ],
    )
}

/// PostgreSQL: rows inserted while k_1 is marked not ready never reach the index.
fn broken_index_pg(env: &Env) -> Result<(), String> {
    broken_index(
        env,
        Target::Postgres,
        &[
            "UPDATE pg_index SET indisready = false WHERE indexrelid = 'k_1'::regclass",
            "INSERT INTO sbtest1 (k, c, pad) SELECT id, 'x', 'y' FROM generate_series(1, 50) AS id",
            "UPDATE pg_index SET indisready = true WHERE indexrelid = 'k_1'::regclass",
        ],
    )
}

/// Flags pgbench and sysbench users type: sysbench's --threads and --report-interval are -c
/// and -P; pgbench's -j and -n and sysbench's --percentile are taken with a note; the others
/// are refused in one line that names dbduel's way (exit 2).
fn habits(_: &Env) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("r.json").display().to_string();
    let out = dbduel(&[
        "run",
        "tpcb",
        "--threads",
        "2",
        "--report-interval",
        "1",
        "-j",
        "2",
        "-n",
        "--percentile",
        "95",
        "-T",
        "2",
        "--json",
        &json,
    ]);
    expect_code(&out, 0, "sysbench and pgbench flags")?;
    let said = text(&out);
    let r = read_result(std::path::Path::new(&json))?;
    ensure(
        r["options"]["clients"] == 2
            && said.contains("progress:")
            && said.contains("note: -j 2")
            && said.contains("note: -n")
            && said.contains("note: --percentile 95"),
        || format!("--threads, --report-interval and the notes:\n{said}"),
    )?;
    for (flag, way) in [
        (&["-i"][..], "dbduel prepare"),
        (&["-r"][..], "per transaction type"),
        (&["-l"][..], "--json"),
        (&["-C"][..], "one connection per client"),
        (&["-L", "50"][..], "capacity --slo"),
        (&["--events", "100"][..], "give -t"),
        (&["--histogram"][..], "HDR histogram"),
    ] {
        let mut args = vec!["run", "tpcb"];
        args.extend(flag);
        let out = dbduel(&args);
        expect_code(&out, 2, &flag.join(" "))?;
        let said = text(&out);
        ensure(
            said.trim().lines().count() == 1 && said.contains(way),
            || format!("{flag:?} must be refused in one line naming {way}:\n{said}"),
        )?;
    }
    Ok(())
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
    let dsn = prepared(env, Target::Sqlite, "failing_sometimes")?;
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

/// `dbduel completions SHELL` prints a script the shell accepts (bash parses it with -n) that
/// knows every command; `dbduel man` prints a roff page naming every command.
fn completions_and_man(_: &Env) -> Result<(), String> {
    let out = dbduel(&["completions", "bash"]);
    expect_code(&out, 0, "completions bash")?;
    let script = String::from_utf8_lossy(&out.stdout).to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("dbduel.bash");
    std::fs::write(&file, &script).map_err(|e| e.to_string())?;
    let parsed = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    ensure(parsed.status.success(), || {
        format!("bash -n refuses the completions: {}", text(&parsed))
    })?;
    let commands = [
        "run", "prepare", "check", "cleanup", "sweep", "duel", "report", "compare", "capacity",
    ];
    ensure(
        commands.iter().all(|c| script.contains(c)) && script.contains("--clients"),
        || "the bash completions lack a command or --clients".into(),
    )?;
    for shell in ["zsh", "fish"] {
        let out = dbduel(&["completions", shell]);
        expect_code(&out, 0, shell)?;
        ensure(
            String::from_utf8_lossy(&out.stdout).contains("capacity"),
            || format!("{shell} completions lack capacity"),
        )?;
    }
    let man = dbduel(&["man"]);
    expect_code(&man, 0, "man")?;
    let page = String::from_utf8_lossy(&man.stdout).to_string();
    ensure(
        page.starts_with(".ie")
            && page.contains(".TH dbduel 1")
            && commands.iter().all(|c| page.contains(c)),
        || format!("not a manual page naming every command:\n{page}"),
    )
}

/// The Dockerfile builds the image the Kubernetes manifests run (dbduel:latest) and copies the
/// binary the package builds; with a container builder here (docker, podman or buildah), it is
/// built and `dbduel --version` run in it; without one, that step is skipped and said so.
fn dockerfile(_: &Env) -> Result<(), String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = std::fs::read_to_string(root.join("Dockerfile")).map_err(|e| e.to_string())?;
    ensure(
        file.contains("target/release/dbduel") && file.contains("ENTRYPOINT [\"dbduel\"]"),
        || "the Dockerfile does not ship the dbduel binary as its entry point".into(),
    )?;
    for manifest in ["run-job.yaml", "merge-job.yaml"] {
        let text = std::fs::read_to_string(root.join("deploy/kubernetes").join(manifest))
            .map_err(|e| e.to_string())?;
        ensure(text.contains("image: dbduel:latest"), || {
            format!("{manifest} names another image than the Dockerfile's dbduel:latest")
        })?;
    }
    let builder = ["docker", "podman", "buildah"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(builder) = builder else {
        eprintln!(
            "note: no container builder (docker, podman, buildah) here: the image is not built"
        );
        return Ok(());
    };
    let build = if builder == "buildah" { "bud" } else { "build" };
    let built = std::process::Command::new(builder)
        .args([build, "-t", "dbduel:test", "."])
        .current_dir(root)
        .output()
        .map_err(|e| e.to_string())?;
    ensure(built.status.success(), || {
        format!("{builder} {build}: {}", text(&built))
    })?;
    let ran = std::process::Command::new(builder)
        .args(["run", "--rm", "dbduel:test", "--version"])
        .output()
        .map_err(|e| e.to_string())?;
    ensure(
        String::from_utf8_lossy(&ran.stdout).starts_with("dbduel "),
        || format!("the image does not run dbduel: {}", text(&ran)),
    )
}

/// pgbench's tpcb-like script on Firebird with a statement timeout of 3 ms, so that cancels
/// (a row of MON$STATEMENTS deleted from another attachment) land on every kind of call,
/// some after their statement ended, on the deferred free of a statement that rsfbclient
/// reads in place of the next call's own answer. The session must not go on out of step with
/// the server (statements on stale transaction handles: "invalid transaction handle",
/// "Invalid Xsqlda"): it attaches again; and every transaction stays whole (`check`).
fn firebird_stray_cancels(env: &Env) -> Result<(), String> {
    let dsn = prepared(env, Target::Firebird, "fb_stray_cancels")?;
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
