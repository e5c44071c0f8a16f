//! Per-statement latencies timed on the client (pgbench's -r): a pgbench script on PostgreSQL and
//! on SQLite prints each command's mean latency and failures in pgbench 17's layout, each command
//! called once per transaction; tpcb on MariaDB gives per-statement means that add up to the
//! transaction's mean (within 15% or 0.2 ms: the client's own work between statements is the
//! rest); `--no-statement-latencies` leaves them out; a statement that fails counts against its
//! own line, and only there; `merge` adds the shards' statement histograms, and says why not when
//! a shard has none; the stored run's statements are in `results show`, and in the HTML and
//! markdown reports' "where the time went" tables.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, prepared_tpcb, read_result, run_json, text,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    crate::env::trials_of(
        env,
        "statement_latencies",
        [
            (
                "script_on_postgres_in_pgbench_layout",
                script_on_postgres as crate::env::Test,
            ),
            ("script_on_sqlite_in_pgbench_layout", script_on_sqlite),
            ("tpcb_on_mariadb_adds_up", tpcb_on_mariadb),
            ("switched_off", switched_off),
            ("a_failure_counts_on_its_line", failure_on_its_line),
            ("shards_merged", shards_merged),
        ],
    )
}

/// A script of meta-commands, transaction control and statements, as pgbench's users write them.
const SCRIPT: &str = r"\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
END;
";

/// The commands as pgbench -r lists them: each one's first line.
fn commands(script: &str) -> Vec<&str> {
    script.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// The summary's lines under pgbench's header, parsed: (mean ms, failures, command).
fn pgbench_lines(said: &str) -> Result<Vec<(f64, u64, String)>, String> {
    let header = "statement latencies in milliseconds and failures:";
    let at = said
        .find(header)
        .ok_or_else(|| format!("no '{header}' in:\n{said}"))?;
    let mut out = Vec::new();
    for line in said[at + header.len()..].lines().skip(1) {
        // pgbench's "   %11.3f  %10d %s": the mean in 11 columns, the failures in 10.
        if line.len() < 28 || !line.starts_with("   ") {
            break;
        }
        let mean = line[3..14].trim().parse::<f64>();
        let failures = line[16..26].trim().parse::<u64>();
        match (mean, failures, &line[26..27]) {
            (Ok(m), Ok(f), " ") => out.push((m, f, line[27..].to_string())),
            _ => return Err(format!("not in pgbench's layout: {line:?}\n{said}")),
        }
    }
    Ok(out)
}

/// Run the script with -r on `dsn`: every command listed in order, in pgbench's layout, called
/// once per transaction, none failed.
fn script_in_pgbench_layout(env: &Env, dsn: &str, name: &str) -> Result<(), String> {
    let file = env.path(&format!("{name}.sql"));
    std::fs::write(&file, SCRIPT).map_err(|e| e.to_string())?;
    let json = env.path(&format!("{name}.json"));
    let out = dbduel(&[
        "run",
        "-f",
        &file.display().to_string(),
        "--dsn",
        dsn,
        "-c",
        "2",
        "-t",
        "30",
        "-r",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, name)?;
    let said = text(&out);
    let lines = pgbench_lines(&said)?;
    let listed: Vec<&str> = lines.iter().map(|l| l.2.as_str()).collect();
    ensure(listed == commands(SCRIPT), || {
        format!("the commands as written, in order:\n{said}")
    })?;
    // A `\set` takes well under a microsecond: 0.000 in pgbench's three decimals, as in its own.
    ensure(
        lines
            .iter()
            .all(|l| (l.0 > 0.0 || l.2.starts_with('\\')) && l.1 == 0),
        || format!("a mean above 0 on every SQL line and no failure on any:\n{said}"),
    )?;
    let r = read_result(&json)?;
    let txns = r["transactions"].as_u64().unwrap_or(0);
    let statements = r["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(txns == 60 && statements.len() == lines.len(), || {
        format!("60 transactions, one statement per command: {statements:?}")
    })?;
    for s in &statements {
        ensure(
            s["calls"].as_u64() == Some(txns)
                && s["calls_per_transaction"].as_f64() == Some(1.0)
                && s["as_written"] == true,
            || format!("each command called once per transaction: {s}"),
        )?;
    }
    Ok(())
}

fn script_on_postgres(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "stmt_script_pg")?;
    script_in_pgbench_layout(env, &dsn, "stmt_script_pg")
}

fn script_on_sqlite(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Sqlite, "stmt_script_sqlite")?;
    script_in_pgbench_layout(env, &dsn, "stmt_script_sqlite")
}

/// tpcb on MariaDB, one client: BEGIN, its five statements and COMMIT, each once per
/// transaction, their means adding up to the transaction's mean.
fn tpcb_on_mariadb(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::MariaDb("InnoDB"), "stmt_tpcb_maria")?;
    let r = run_json(
        env,
        "stmt_tpcb_maria",
        &["run", "tpcb", "--dsn", &dsn, "-c", "1", "-t", "300"],
        0,
    )?;
    let statements = r["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let texts: Vec<&str> = statements
        .iter()
        .map(|s| s["text"].as_str().unwrap_or(""))
        .collect();
    ensure(
        statements.len() == 7 && texts[0] == "BEGIN" && texts[6] == "COMMIT",
        || format!("BEGIN, five statements, COMMIT: {texts:?}"),
    )?;
    ensure(
        statements
            .iter()
            .all(|s| s["calls"].as_u64() == Some(300) && s["transaction"] == "tpcb-like"),
        || format!("each called once in each of the 300 transactions: {statements:?}"),
    )?;
    let sum: f64 = statements
        .iter()
        .map(|s| s["mean_ms"].as_f64().unwrap_or(0.0))
        .sum();
    let mean = r["latency_ms"]["mean"].as_f64().unwrap_or(0.0);
    let share: f64 = statements
        .iter()
        .map(|s| s["share"].as_f64().unwrap_or(0.0))
        .sum();
    ensure(
        sum <= mean * 1.01 && sum >= mean * 0.85 - 0.2 && (0.8..=1.01).contains(&share),
        || {
            format!(
                "statement means summed {sum:.3} ms (shares {share:.3}) against the transaction's {mean:.3} ms"
            )
        },
    )
}

/// `--no-statement-latencies`: neither the summary nor the result holds them.
fn switched_off(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Sqlite, "stmt_off")?;
    let json = env.path("stmt_off.json");
    let out = dbduel(&[
        "run",
        "tpcb",
        "--dsn",
        &dsn,
        "-t",
        "20",
        "--no-statement-latencies",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 0, "--no-statement-latencies")?;
    let said = text(&out);
    let r = read_result(&json)?;
    ensure(
        r.get("statement_latencies").is_none() && !said.contains("statements of tpcb-like"),
        || format!("no statements when switched off:\n{said}"),
    )?;
    // And on by default, on the same database.
    let on = run_json(
        env,
        "stmt_on",
        &["run", "tpcb", "--dsn", &dsn, "-t", "20"],
        0,
    )?;
    ensure(
        on["statement_latencies"]
            .as_array()
            .is_some_and(|s| s.len() == 7),
        || format!("statements by default: {on}"),
    )
}

/// A script whose statement fails in about half of the transactions (a division by zero on
/// PostgreSQL): the failures are that command's, and the commands after it ran only in the
/// transactions that succeeded.
fn failure_on_its_line(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "stmt_fail");
    let script = "\\set r random(1, 2)\nBEGIN;\nSELECT 1 / (:r - 1);\nEND;\n";
    let file = env.path("stmt_fail.sql");
    std::fs::write(&file, script).map_err(|e| e.to_string())?;
    let json = env.path("stmt_fail.json");
    let out = dbduel(&[
        "run",
        "-f",
        &file.display().to_string(),
        "--dsn",
        &dsn,
        "-t",
        "60",
        "--json",
        &json.display().to_string(),
    ]);
    expect_code(&out, 1, "a failing statement")?;
    let said = text(&out);
    let lines = pgbench_lines(&said)?;
    let r = read_result(&json)?;
    let (txns, errors) = (
        r["transactions"].as_u64().unwrap_or(0),
        r["errors"].as_u64().unwrap_or(0),
    );
    ensure(txns > 0 && errors > 0 && txns + errors == 60, || {
        format!("both outcomes in 60 transactions: {txns} and {errors}:\n{said}")
    })?;
    let failures: Vec<u64> = lines.iter().map(|l| l.1).collect();
    ensure(failures == [0, 0, errors, 0], || {
        format!("{errors} failures on the division's line only:\n{said}")
    })?;
    let statements = r["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let calls: Vec<u64> = statements
        .iter()
        .map(|s| s["calls"].as_u64().unwrap_or(0))
        .collect();
    ensure(calls == [60, 60, txns, txns], || {
        format!(
            "calls of \\set and BEGIN in every transaction, of the rest in those that passed: {calls:?}"
        )
    })
}

/// Two shards of tpcb on SQLite merged: each statement's calls summed and its p99 that of the
/// shards' histograms added; a shard without statements leaves them out, with a warning.
fn shards_merged(env: &Env) -> Result<(), String> {
    use crate::shards::{histogram, merge, run_shards};
    let dsn = prepared_tpcb(env, Target::Sqlite, "stmt_shards")?;
    let files = run_shards(
        env,
        "stmt_shards",
        2,
        &["run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "2"],
    )?;
    let shards: Vec<serde_json::Value> = files
        .iter()
        .map(|f| read_result(f))
        .collect::<Result<_, _>>()?;
    let json = env.path("stmt_shards_merged.json");
    expect_code(&merge(&files, &json), 0, "merge")?;
    let merged = read_result(&json)?;
    let lines = merged["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure(lines.len() == 7, || {
        format!("seven statements merged: {merged}")
    })?;
    for (i, line) in lines.iter().enumerate() {
        let mut added: Option<hdrhistogram::Histogram<u64>> = None;
        let mut calls = 0;
        for s in &shards {
            calls += s["statement_latencies"][i]["calls"].as_u64().unwrap_or(0);
            let text = s["shard"]["statement_histograms"][i].as_str().unwrap_or("");
            let mut h = histogram(text)?;
            h.auto(true);
            match added.as_mut() {
                Some(a) => a.add(&h).map_err(|e| format!("{e:?}"))?,
                None => added = Some(h),
            }
        }
        let p99 = added.map_or(0.0, |h| h.value_at_quantile(0.99) as f64 / 1000.0);
        ensure(
            line["calls"].as_u64() == Some(calls) && line["p99_ms"].as_f64() == Some(p99),
            || format!("{calls} calls and p99 {p99} ms from the shards' histograms: {line}"),
        )?;
    }
    reported(env, &files)?;
    // A shard whose result holds no statements: merged without them, and said.
    let mut bare = shards[1].clone();
    bare.as_object_mut()
        .map(|o| o.remove("statement_latencies"));
    let bare_file = env.path("stmt_shards-bare.json");
    std::fs::write(&bare_file, bare.to_string()).map_err(|e| e.to_string())?;
    let out = merge(&[files[0].clone(), bare_file], &env.path("stmt_bare.json"));
    expect_code(&out, 0, "merge with a shard without statements")?;
    let said = text(&out);
    let r = read_result(&env.path("stmt_bare.json"))?;
    ensure(
        r.get("statement_latencies").is_none() && said.contains("per-statement latencies left out"),
        || format!("left out, and said:\n{said}"),
    )
}

/// The merged run kept in a store: `results show` holds its statements, and both reports list
/// them, COMMIT among them.
fn reported(env: &Env, files: &[std::path::PathBuf]) -> Result<(), String> {
    let store = env.path("stmt_store.db").display().to_string();
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend([
        "--results".into(),
        store.clone(),
        "--plan".into(),
        "stmt".into(),
    ]);
    expect_code(&dbduel(&args), 0, "merge --results")?;
    let shown = dbduel(&["results", "show", "1", "--results", &store]);
    expect_code(&shown, 0, "results show")?;
    let json: serde_json::Value =
        serde_json::from_slice(&shown.stdout).map_err(|e| e.to_string())?;
    ensure(
        json["statement_latencies"]
            .as_array()
            .is_some_and(|s| s.len() == 7),
        || format!("results show holds the statements: {json}"),
    )?;
    let md = dbduel(&["report", "--results", &store, "--format", "markdown"]);
    expect_code(&md, 0, "report --format markdown")?;
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    let section = md
        .split("## Statement latencies, timed on the client")
        .nth(1)
        .unwrap_or("");
    ensure(
        section.contains("| tpcb-like | COMMIT | 1.00 |")
            && section.contains("| tpcb-like | BEGIN | 1.00 |"),
        || format!("the markdown report's statements:\n{md}"),
    )?;
    let html = env.path("stmt_report.html");
    let out = dbduel(&[
        "report",
        "--results",
        &store,
        "-o",
        &html.display().to_string(),
    ]);
    expect_code(&out, 0, "report")?;
    let page = std::fs::read_to_string(&html).map_err(|e| e.to_string())?;
    let section = page
        .split("<section id=\"statements\">")
        .nth(1)
        .unwrap_or("");
    ensure(
        section.contains("<td>COMMIT</td>")
            && section.contains("UPDATE pgbench_accounts SET abalance"),
        || format!("the HTML report's statements section: {section:.2000}"),
    )
}
