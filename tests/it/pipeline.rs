//! pgbench's pipeline mode (`\startpipeline`, `\syncpipeline`, `\endpipeline`): the pipelined
//! tpcb-like script shipped in bench/scripts keeps tpcb's invariants on every engine (PostgreSQL
//! pipelines, the others run the statements as they come; Firebird 3's known partial commit on
//! hot rows gets one more try, as in script.rs), and on PostgreSQL the statements'
//! time shows at `\endpipeline`, as pgbench's -r shows it; the cases of pgbench's own TAP tests
//! (a second \startpipeline, \endpipeline with no start, \gset in a pipeline, a script ending
//! with its pipeline open, `\syncpipeline` segments, a serializable transaction in a pipeline
//! with four clients) in pgbench's words; a failed statement skips the rest of its segment only
//! (the segment after a \syncpipeline commits) and names the \endpipeline where it was read;
//! `-M simple` refused before the run; pgbench's `-M extended` on PostgreSQL (tpcb's invariants,
//! parameters and \gset through the unnamed statement), refused with the reason elsewhere.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, TARGETS, Target, again_if_firebird_broke_an_invariant, dbduel, ensure, expect_code,
    per_target, prepared_tpcb, read_result, session, text,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = per_target(
        env,
        "pipeline::tpcb_like_keeps_invariants",
        TARGETS,
        tpcb_like,
    );
    out.extend(crate::env::trials_of(
        env,
        "pipeline",
        [
            (
                "time_shows_at_endpipeline::postgres",
                time_at_end as crate::env::Test,
            ),
            ("pgbench_cases::postgres", |env: &Env| {
                pgbench_cases(env, Target::Postgres)
            }),
            ("pgbench_cases::sqlite", |env: &Env| {
                pgbench_cases(env, Target::Sqlite)
            }),
            ("a_failure_skips_its_segment_only::postgres", segments),
            ("extended_protocol::postgres", extended),
        ],
    ));
    out
}

const TPCB_PIPELINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bench/scripts/tpcb-like-pipeline.sql"
);

fn tpcb_like(env: &Env, target: Target) -> Result<(), String> {
    // Firebird 3's fault on hot rows happens rarely even without lock waits.
    again_if_firebird_broke_an_invariant(
        "pipeline::tpcb_like_keeps_invariants::firebird",
        target,
        "check tpcb after the pipelined script",
        || tpcb_like_once(env, target),
    )
}

fn tpcb_like_once(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "pipe_tpcb");
    let mut prepare = vec!["prepare", "tpcb", "--dsn", &dsn];
    let flags = target.flags();
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare tpcb")?;
    let json = env.path(&format!("pipe_tpcb_{}.json", target.label()));
    // Firebird: no lock waits (`lock_wait=nowait`, as docs/connecting.md advises for
    // contended scripts on Firebird 3), the conflicts retried.
    let run_dsn = match target {
        Target::Firebird => {
            let sep = if dsn.contains('?') { '&' } else { '?' };
            format!("{dsn}{sep}lock_wait=nowait")
        }
        _ => dsn.clone(),
    };
    let out = dbduel(&[
        "run",
        TPCB_PIPELINE,
        "--dsn",
        &run_dsn,
        "-c",
        "4",
        "-T",
        "2",
        "-M",
        "prepared",
        "--max-tries",
        target.max_tries(),
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "run tpcb-like-pipeline.sql")?;
    let r = read_result(&json)?;
    let txns = r["transactions"].as_u64().unwrap_or(0);
    ensure(txns > 0, || text(&out))?;
    // Every transaction inserted its history row: none was lost in a pipeline.
    let rows = session(&dsn)
        .query_text("SELECT COUNT(*) FROM pgbench_history")
        .map_err(|e| e.to_string())?;
    let history = rows[0][0].as_i64().unwrap_or(-1);
    ensure(history as u64 == txns, || {
        format!(
            "{history} history rows after {txns} transactions:\n{}",
            text(&out)
        )
    })?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check tpcb after the pipelined script",
    )
}

/// -r on PostgreSQL: the statements inside the pipeline only queue (pgbench shows 0.000 for
/// them); the wait for their replies is \endpipeline's.
fn time_at_end(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "pipe_time")?;
    let json = env.path("pipe_time.json");
    let out = dbduel(&[
        "run",
        TPCB_PIPELINE,
        "--dsn",
        &dsn,
        "-c",
        "1",
        "-t",
        "200",
        "-M",
        "prepared",
        "-r",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "run tpcb-like-pipeline.sql -r")?;
    let r = read_result(&json)?;
    let lines = r["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mean = |start: &str| {
        lines
            .iter()
            .find(|l| l["text"].as_str().is_some_and(|t| t.starts_with(start)))
            .and_then(|l| l["mean_ms"].as_f64())
    };
    let end = mean("\\endpipeline").ok_or_else(|| format!("no \\endpipeline line: {lines:?}"))?;
    for statement in ["UPDATE pgbench_accounts", "SELECT abalance", "INSERT INTO"] {
        let m = mean(statement).ok_or_else(|| format!("no {statement} line: {lines:?}"))?;
        ensure(m * 5.0 < end, || {
            format!(
                "{statement} {m} ms, \\endpipeline {end} ms: the replies are waited for at the end\n{}",
                text(&out)
            )
        })?;
    }
    Ok(())
}

fn script(env: &Env, name: &str, body: &str) -> Result<String, String> {
    let path = env.path(name);
    std::fs::write(&path, body).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}

/// The cases of pgbench's 001_pgbench_with_server.pl, each run as pgbench runs them there
/// (`-t 1 -n`), with its words; on SQLite the same words, the statements run as they come.
fn pgbench_cases(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "pipe_cases");
    let label = target.label();
    // pgbench's tests run these with -M extended, which SQLite has not.
    let protocol = match target {
        Target::Postgres => "extended",
        _ => "prepared",
    };
    let run = |file: &str, more: &[&str]| {
        let mut args = vec!["run", file, "--dsn", &dsn, "-t", "1", "-n", "-M", protocol];
        args.extend(more);
        dbduel(&args)
    };
    let aborted = [
        (
            "twice",
            "\\startpipeline\nSELECT 1;\n\\startpipeline\n\\endpipeline\n",
            "twice.sql:3: already in pipeline mode",
        ),
        (
            "no_start",
            "SELECT 1;\n\\endpipeline\n",
            "no_start.sql:2: not in pipeline mode",
        ),
        (
            "sync_no_start",
            "\\syncpipeline\nSELECT 1;\n",
            "sync_no_start.sql:1: not in pipeline mode",
        ),
        (
            "gset",
            "\\startpipeline\nSELECT 1 AS one \\gset\n\\endpipeline\n",
            "gset.sql:2: \\gset is not allowed in pipeline mode",
        ),
        (
            "open",
            "\\startpipeline\nSELECT 1;\n",
            "open.sql: end of script reached with pipeline open",
        ),
    ];
    for (name, body, words) in aborted {
        let file = script(env, &format!("{name}_{label}.sql"), body)?;
        let file_name = format!("{name}_{label}.sql");
        let words = words.replacen(&format!("{name}.sql"), &file_name, 1);
        let out = run(&file, &[]);
        expect_code(&out, 1, name)?;
        ensure(text(&out).contains(&words), || {
            format!("{name}: expected {words:?} in:\n{}", text(&out))
        })?;
    }
    // 'working \startpipeline with \syncpipeline': processed 1/1.
    let file = script(
        env,
        &format!("sync_{label}.sql"),
        "\\startpipeline\nselect 1;\n\\syncpipeline\n\\syncpipeline\nselect 2;\n\\syncpipeline\nselect 3;\n\\endpipeline\n",
    )?;
    let json = env.path(&format!("sync_{label}.json"));
    let out = run(&file, &["--json", &json.display().to_string()]);
    expect_code(&out, 0, "\\syncpipeline")?;
    ensure(read_result(&json)?["transactions"] == 1, || text(&out))?;
    // 'working \startpipeline with serializable', four clients.
    let file = script(
        env,
        &format!("serializable_{label}.sql"),
        &format!(
            "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\n{}END;\n\\endpipeline\n",
            "select 1;\n".repeat(10)
        ),
    )?;
    if matches!(target, Target::Postgres) {
        let json = env.path("serializable.json");
        let out = dbduel(&[
            "run",
            &file,
            "--dsn",
            &dsn,
            "-c",
            "4",
            "-t",
            "10",
            "-M",
            "prepared",
            "--json",
            &json.display().to_string(),
        ]);
        expect_code(&out, 0, "serializable pipeline")?;
        ensure(read_result(&json)?["transactions"] == 40, || text(&out))?;
    }
    // pgbench aborts each client that reaches the pipeline; dbduel refuses the run.
    let out = dbduel(&["run", &file, "--dsn", &dsn, "-t", "1", "-M", "simple"]);
    expect_code(&out, 2, "-M simple")?;
    ensure(
        text(&out).contains(
            "cannot use pipeline mode with the simple query protocol: run with -M prepared",
        ),
        || text(&out),
    )?;
    let file = script(
        env,
        &format!("arg_{label}.sql"),
        "\\startpipeline now\nSELECT 1;\n\\endpipeline\n",
    )?;
    let out = run(&file, &[]);
    expect_code(&out, 2, "\\startpipeline with an argument")?;
    ensure(
        text(&out).contains("unexpected argument in command \"startpipeline\""),
        || text(&out),
    )?;
    if protocol == "extended" {
        return Ok(());
    }
    // -M extended is PostgreSQL's: refused, with the modes there are.
    let out = dbduel(&["run", "tpcb", "--dsn", &dsn, "-t", "1", "-M", "extended"]);
    expect_code(&out, 2, "-M extended")?;
    ensure(
        text(&out).contains("-M extended is PostgreSQL's extended query protocol")
            && text(&out).contains("use -M prepared"),
        || text(&out),
    )
}

/// pgbench's -M extended on PostgreSQL: the built-in tpcb keeps its invariants, and a script's
/// values travel as parameters and come back through \gset (read by the RowDescription each
/// statement's Describe brings), into a pipeline.
fn extended(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "pipe_extended")?;
    let out = dbduel(&[
        "run", "tpcb", "--dsn", &dsn, "-c", "2", "-t", "50", "-M", "extended",
    ]);
    expect_code(&out, 0, "run tpcb -M extended")?;
    ensure(text(&out).contains("extended"), || text(&out))?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check tpcb after -M extended",
    )?;
    session(&dsn)
        .batch("CREATE TABLE ext_out (twice int, label text)")
        .map_err(|e| e.to_string())?;
    let file = script(
        env,
        "extended.sql",
        "\\set n 7\nSELECT CAST(:n AS INTEGER) * 2 AS twice, 'x' || :n AS label \\gset\n\\startpipeline\nINSERT INTO ext_out VALUES (:twice, :label);\n\\endpipeline\n",
    )?;
    let out = dbduel(&["run", &file, "--dsn", &dsn, "-t", "1", "-M", "extended"]);
    expect_code(&out, 0, "a script under -M extended")?;
    let rows = session(&dsn)
        .query_text("SELECT twice, label FROM ext_out")
        .map_err(|e| e.to_string())?;
    ensure(
        rows.len() == 1 && rows[0][0].as_i64() == Some(14) && rows[0][1].to_string() == "x7",
        || format!("one row (14, x7): {rows:?}\n{}", text(&out)),
    )
}

/// Without BEGIN each segment between Syncs is a transaction of its own: the division by zero
/// rolls back its segment's INSERT, the segment after \syncpipeline commits; the transaction
/// fails with the server's words, named at the \endpipeline that read them.
fn segments(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "pipe_segments");
    session(&dsn)
        .batch("CREATE TABLE pipe_out (v int)")
        .map_err(|e| e.to_string())?;
    let file = script(
        env,
        "segments.sql",
        "\\startpipeline\nINSERT INTO pipe_out VALUES (1);\nSELECT 1 / 0;\nINSERT INTO pipe_out VALUES (2);\n\\syncpipeline\nINSERT INTO pipe_out VALUES (3);\n\\endpipeline\n",
    )?;
    let out = dbduel(&["run", &file, "--dsn", &dsn, "-t", "1", "-M", "prepared"]);
    expect_code(&out, 1, "a division by zero in the pipeline")?;
    ensure(
        text(&out).contains("segments.sql:7: ") && text(&out).contains("division by zero"),
        || text(&out),
    )?;
    let rows = session(&dsn)
        .query_text("SELECT v FROM pipe_out ORDER BY v")
        .map_err(|e| e.to_string())?;
    let kept: Vec<i64> = rows.iter().filter_map(|r| r[0].as_i64()).collect();
    ensure(kept == [3], || {
        format!(
            "only the segment after the Sync commits: {kept:?}\n{}",
            text(&out)
        )
    })
}
