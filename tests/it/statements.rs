//! Where the server's time went, statement by statement: a tpcb run on PostgreSQL (the test
//! server preloads pg_stat_statements, as a managed server started with `--server-statements`
//! does) and on MariaDB (its performance_schema digests, likewise) names tpcb's UPDATE of
//! pgbench_accounts among its top statements, once per transaction, in the result and the
//! summary, and the HTML and markdown reports of a sweep's store, joined to the clients' own
//! timing of it (a client-side mean that holds the server's); a database without the
//! extension gets the note saying how to enable it, and so does a server `dbduel server start`
//! leaves as the engine ships (which the same server started again with the flag does not),
//! and a sweep's plan asking for them gets them; Firebird and SQLite say why they have no figures, and so does `--no-waits`.
//! Each fails when the figures or the note are taken out of the result.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, Test, dbduel, ensure, expect_code, read_result, text, trials_of};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 11] = [
        ("postgres_tpcb_top_statements", postgres_tpcb),
        ("reports_read_them_from_the_store", reports),
        ("mariadb_tpcb_top_statements", mariadb_tpcb),
        (
            "postgres_without_extension_says_how",
            postgres_without_extension,
        ),
        (
            "postgres_managed_keeps_none_unless_asked",
            postgres_managed_default,
        ),
        (
            "mariadb_managed_keeps_none_unless_asked",
            mariadb_managed_default,
        ),
        ("a_plan_asks_for_them", plan_asks),
        ("no_waits_says_so", no_waits),
        ("mariadb_full_digest_table_says_so", full_digests),
        ("firebird_says_why", firebird),
        ("sqlite_says_why", sqlite),
    ];
    trials_of(env, "statements", tests)
}

/// Prepare tpcb at scale 1 on `dsn` and run it, with `extra` flags: the result and the run's
/// output.
fn tpcb(
    env: &Env,
    name: &str,
    dsn: &str,
    target: Target,
    extra: &[&str],
) -> Result<(serde_json::Value, String), String> {
    let flags = target.flags();
    let mut prepare = vec!["prepare", "tpcb", "--scale", "1", "--dsn", dsn];
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let json = env.path(&format!("statements-{name}.json"));
    let json_s = json.display().to_string();
    let run = vec![
        "run",
        "tpcb",
        "--dsn",
        dsn,
        "-c",
        "2",
        "-T",
        "3",
        "--warmup",
        "1",
        "--max-tries",
        target.max_tries(),
        "--json",
        &json_s,
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = dbduel(&[run, flags, extra.to_vec()].concat());
    expect_code(&out, 0, "run")?;
    Ok((read_result(&json)?, text(&out)))
}

/// tpcb's UPDATE of pgbench_accounts is among the top statements, about once per
/// transaction, with its share of the time; the summary's table names it.
fn names_the_update(r: &serde_json::Value, summary: &str) -> Result<(), String> {
    let st = &r["statements"];
    let top = st["top"].as_array().cloned().unwrap_or_default();
    let update = top.iter().find(|s| {
        let t = s["text"].as_str().unwrap_or_default().replace('`', "");
        t.to_uppercase().starts_with("UPDATE PGBENCH_ACCOUNTS")
    });
    let Some(update) = update else {
        return Err(format!(
            "no UPDATE pgbench_accounts among the top statements: {st}"
        ));
    };
    let per_tx = update["calls_per_transaction"].as_f64().unwrap_or(0.0);
    ensure((0.9..=1.1).contains(&per_tx), || {
        format!("UPDATE pgbench_accounts ran {per_tx} times per transaction: {update}")
    })?;
    let share = update["share"].as_f64().unwrap_or(0.0);
    let mean = update["mean_ms"].as_f64().unwrap_or(0.0);
    ensure(share > 0.0 && share <= 1.0 && mean > 0.0, || {
        format!("share {share}, mean {mean} ms: {update}")
    })?;
    // Joined to the clients' own timing of it: its mean there holds the server's.
    let client = &update["client"];
    let (c_mean, outside) = (client["mean_ms"].as_f64(), client["outside_ms"].as_f64());
    ensure(
        c_mean.is_some_and(|c| c >= mean) && outside.is_some_and(|o| o >= 0.0),
        || format!("the client's side of the UPDATE is missing or below the server's: {update}"),
    )?;
    // dbduel's own observation statements are left out.
    ensure(
        !st.to_string().contains("pg_stat_activity") && !st.to_string().contains("PROCESSLIST"),
        || format!("the sampler's own statements are counted: {st}"),
    )?;
    ensure(
        summary.contains("where the time went")
            && summary.contains("client p99")
            && summary.contains("pgbench_accounts"),
        || format!("the summary has no statements' table:\n{summary}"),
    )
}

/// A tpcb run on a fresh database of `target` names the UPDATE (`names_the_update`): the
/// statement that took the most time.
fn top_statement(env: &Env, target: Target) -> Result<serde_json::Value, String> {
    let name = target.label();
    let dsn = env.fresh_db(target, &format!("statements_{name}"));
    let (r, summary) = tpcb(env, &name, &dsn, target, &[])?;
    names_the_update(&r, &summary)?;
    Ok(r["statements"]["top"][0].clone())
}

/// PostgreSQL's buffers and WAL per statement.
fn postgres_tpcb(env: &Env) -> Result<(), String> {
    let top = top_statement(env, Target::Postgres)?;
    let figures = top["blocks_hit"].is_u64() && top["wal_bytes"].is_u64();
    ensure(figures, || format!("no blocks or WAL figures: {top}"))
}

/// MariaDB's rows examined and lock time per digest.
fn mariadb_tpcb(env: &Env) -> Result<(), String> {
    let top = top_statement(env, Target::MariaDb("InnoDB"))?;
    let figures = top["rows_examined"].is_u64() && top["lock_ms"].is_f64();
    ensure(figures, || format!("no rows examined or lock time: {top}"))
}

/// A database whose pg_stat_statements was dropped: no figures, and the note says to create
/// the extension.
fn postgres_without_extension(env: &Env) -> Result<(), String> {
    let target = Target::Postgres;
    let dsn = env.fresh_db(target, "statements_pg_none");
    crate::env::session(&dsn)
        .batch("DROP EXTENSION IF EXISTS pg_stat_statements")
        .map_err(|e| e.message)?;
    let (r, summary) = tpcb(env, "pg-none", &dsn, target, &[])?;
    absent(
        &r,
        &summary,
        "CREATE EXTENSION pg_stat_statements in this database",
    )
}

/// A server as `dbduel server start` leaves it without `--server-statements` keeps no figures
/// per statement (as the engine ships: keeping them costs it), and the note names the flag;
/// started again on the same directory with it, the figures are there.
fn managed_default(env: &Env, engine: &str, target: Target, why: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let d = dir.path().join(engine).display().to_string();
    let start = |extra: &[&str]| {
        let out = dbduel(&[&["server", "start", engine, "--data-dir", &d], extra].concat());
        expect_code(&out, 0, "server start")?;
        let dsn = dbduel(&["server", "dsn", "--data-dir", &d]);
        expect_code(&dsn, 0, "server dsn")?;
        Ok::<_, String>((
            text(&out),
            String::from_utf8_lossy(&dsn.stdout).trim().to_string(),
        ))
    };
    let checked = (|| {
        let (started, dsn) = start(&[])?;
        ensure(!started.contains("server statements"), || {
            format!("a default start says it keeps the statements:\n{started}")
        })?;
        let (r, summary) = tpcb(env, &format!("{engine}-default"), &dsn, target, &[])?;
        absent(&r, &summary, why)?;
        absent(&r, &summary, "start it with --server-statements")?;
        expect_code(
            &dbduel(&["server", "stop", "--data-dir", &d]),
            0,
            "server stop",
        )?;
        let (started, dsn) = start(&["--server-statements"])?;
        ensure(
            started.contains("profile default, server statements"),
            || format!("the start does not say it keeps the statements:\n{started}"),
        )?;
        let (r, summary) = tpcb(env, &format!("{engine}-kept"), &dsn, target, &[])?;
        names_the_update(&r, &summary)
    })();
    let _ = dbduel(&["server", "stop", "--data-dir", &d]);
    checked
}

/// A sweep's plan with `server_statements = true` on a PostgreSQL it manages: its point has the
/// figures, which the markdown report shows.
fn plan_asks(_env: &Env) -> Result<(), String> {
    let toml = "engines = [\"postgres\"]\nclients = [2]\ntime = 2\nserver_statements = true\n";
    let (_, md) = crate::env::sweep_reports(toml)?;
    let section = md
        .split("## Where the time went")
        .nth(1)
        .unwrap_or_default();
    let named = section.contains("pgbench\\_accounts") || section.contains("pgbench_accounts");
    ensure(named, || {
        format!("the plan's server kept no figures per statement:\n{md}")
    })
}

fn postgres_managed_default(env: &Env) -> Result<(), String> {
    let why = "pg_stat_statements is created in this database but not loaded";
    managed_default(env, "postgres", Target::Postgres, why)
}

fn mariadb_managed_default(env: &Env) -> Result<(), String> {
    let why = "performance_schema is off: start MariaDB with performance_schema=ON";
    managed_default(env, "mysql", Target::MariaDb("InnoDB"), why)
}

/// A MariaDB whose digest table holds two rows: the run's statements are counted in its
/// overflow row, which the result names with what to do.
fn full_digests(env: &Env) -> Result<(), String> {
    let server = dbduel::server::start_for_tests(
        &dbduel::server::MARIADB,
        &[("performance_schema_digests_size", "2")],
    )
    .map_err(|e| e.to_string())?;
    let dsn = server.dsn_text("");
    let (r, summary) = tpcb(env, "maria-full", &dsn, Target::MariaDb("InnoDB"), &[])?;
    let top = r["statements"]["top"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(
        top.iter().any(|s| {
            s["text"].as_str().is_some_and(|t| {
                t.contains("digest table is full") && t.contains("performance_schema_digests_size")
            }) && s["calls"].as_u64() > Some(0)
        }),
        || {
            format!(
                "no overflow row among the statements: {}\n{summary}",
                r["statements"]
            )
        },
    )
}

/// `--no-waits` on a server that has the figures: none read, and the note says why.
fn no_waits(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "statements_no_waits");
    let (r, summary) = tpcb(env, "no-waits", &dsn, Target::Postgres, &["--no-waits"])?;
    absent(&r, &summary, "--no-waits turned the server's sampling off")
}

/// No figures in the result, and the note (in the summary too) contains `why`.
fn absent(r: &serde_json::Value, summary: &str, why: &str) -> Result<(), String> {
    let st = &r["statements"];
    let note = st["note"].as_str().unwrap_or_default();
    ensure(note.contains(why), || format!("note lacks '{why}': {st}"))?;
    ensure(st["top"].as_array().is_some_and(Vec::is_empty), || {
        format!("figures despite the note: {st}")
    })?;
    ensure(summary.contains(why), || {
        format!("the summary lacks '{why}':\n{summary}")
    })
}

/// A tpcb run on a fresh database of `target` has no figures, and says `why`.
fn says_why(env: &Env, target: Target, why: &str) -> Result<(), String> {
    let name = target.label();
    let dsn = env.fresh_db(target, &format!("statements_{name}"));
    let (r, summary) = tpcb(env, &name, &dsn, target, &[])?;
    absent(&r, &summary, why)
}

fn firebird(env: &Env) -> Result<(), String> {
    let why = "Firebird keeps no cumulative figures per statement";
    says_why(env, Target::Firebird, why)
}

fn sqlite(env: &Env) -> Result<(), String> {
    let why = "SQLite runs inside dbduel and keeps no cumulative figures";
    says_why(env, Target::Sqlite, why)
}

/// A sweep's point on PostgreSQL, stored: the HTML and markdown reports read its statements
/// from the store and show the table.
fn reports(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "statements_report");
    let (page, md) = crate::env::stored_reports("postgres", &dsn)?;
    let section = page.split("id=\"statements\"").nth(1).unwrap_or_default();
    ensure(section.contains("UPDATE pgbench_accounts"), || {
        format!(
            "the HTML report has no statements' table: {}",
            &page[page.len().saturating_sub(3000)..]
        )
    })?;
    let section = md
        .split("## Where the time went")
        .nth(1)
        .unwrap_or_default();
    ensure(
        section.contains("UPDATE pgbench\\_accounts")
            || section.contains("UPDATE pgbench_accounts"),
        || format!("the markdown report has no statements' table:\n{md}"),
    )
}
