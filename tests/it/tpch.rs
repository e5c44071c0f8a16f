//! TPC-H on every engine: `prepare` at scale factor 0.01, the power test in both protocols,
//! and `check` against the reference answers; the throughput test (`--streams`) and chosen
//! queries (`--queries`, `--repeat`); `--query-timeout`; a sweep plan of `workload = "tpch"`;
//! a damaged row failing `check` with the query named; refused command lines.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, read_result, refusals, session, text, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 4] = [
        (
            "bad_queries",
            &["run", "tpch", "--queries", "1,23"],
            "--queries 1,23: '23' is not a TPC-H query",
        ),
        (
            "clients",
            &["run", "tpch", "-c", "2"],
            "--clients: tpch runs its streams to their end",
        ),
        (
            "small_scale_factor",
            &[
                "prepare",
                "tpch",
                "--scale-factor",
                "0.001",
                "--dsn",
                "sqlite:///nonexistent/t.db",
            ],
            "--scale-factor 0.001",
        ),
        (
            "repeat_zero",
            &["run", "tpch", "--repeat", "0"],
            "--repeat 0",
        ),
    ];
    let mut out = refusals("tpch", refused);
    for target in [
        Target::Sqlite,
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::MariaDb("MyISAM"),
        Target::MariaDb("Aria"),
        Target::Firebird,
    ] {
        let name = format!("tpch::power_and_check::{}", target.label());
        out.push(with_env(env, name, move |env| power_and_check(env, target)));
    }
    out.push(with_env(env, "tpch::throughput_postgres", throughput));
    for target in [Target::Postgres, Target::Sqlite, Target::Firebird] {
        let name = format!("tpch::query_timeout::{}", target.label());
        out.push(with_env(env, name, move |env| query_timeout(env, target)));
    }
    out.push(with_env(
        env,
        "tpch::failed_refresh_undone_postgres",
        failed_refresh_undone,
    ));
    out.push(with_env(env, "tpch::queries_repeated", queries_repeated));
    out.push(with_env(env, "tpch::sweep_plan", sweep_plan));
    out.push(with_env(
        env,
        "tpch::check_names_a_wrong_answer",
        check_names_a_wrong_answer,
    ));
    out
}

fn prepare(dsn: &str, target: Target) -> Result<(), String> {
    let mut args = vec!["prepare", "tpch", "--scale-factor", "0.01", "--dsn", dsn];
    let flags = target.flags();
    args.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&args), 0, "prepare tpch")
}

/// Run tpch with `extra` flags; the result's JSON.
fn run(env: &Env, dsn: &str, name: &str, extra: &[&str]) -> Result<serde_json::Value, String> {
    let json = env.path(&format!("tpch-{name}.json"));
    let json_s = json.display().to_string();
    let mut args = vec!["run", "tpch", "--dsn", dsn, "--json", &json_s];
    args.extend(extra);
    expect_code(&dbduel(&args), 0, &format!("run tpch {}", extra.join(" ")))?;
    let r = read_result(&json)?;
    ensure(r["errors"] == 0, || {
        format!("errors: {}", r["errors_by_kind"])
    })?;
    Ok(r)
}

/// One transaction type's count of a result.
fn count(r: &serde_json::Value, name: &str) -> u64 {
    r["transaction_types"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .and_then(|t| t["transactions"].as_u64())
        .unwrap_or(0)
}

fn power_and_check(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "tpch");
    prepare(&dsn, target)?;
    for protocol in ["simple", "prepared"] {
        let r = run(
            env,
            &dsn,
            &format!("{}-{protocol}", target.label()),
            &["-M", protocol],
        )?;
        ensure(r["transactions"] == 24, || {
            format!("transactions: {}", r["transactions"])
        })?;
        let power = r["workload"]["metrics"]["power_at_size"]
            .as_f64()
            .unwrap_or(0.0);
        ensure(power > 0.0, || format!("no Power@Size: {}", r["workload"]))?;
        ensure(r["workload"]["metrics"]["Q01 rows"] == 4.0, || {
            format!("Q1's rows: {}", r["workload"]["metrics"])
        })?;
        let out = dbduel(&["check", "tpch", "--dsn", &dsn]);
        expect_code(
            &out,
            0,
            &format!("check after run -M {protocol}:\n{}", text(&out)),
        )?;
    }
    Ok(())
}

fn throughput(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpch_streams");
    prepare(&dsn, Target::Postgres)?;
    let r = run(env, &dsn, "streams", &["--streams", "2"])?;
    // The power test (24), two query streams (44) and the refresh stream (two pairs).
    ensure(r["transactions"] == 24 + 44 + 4, || {
        format!("transactions: {}", r["transactions"])
    })?;
    let m = &r["workload"]["metrics"];
    let (p, t, q) = (
        m["power_at_size"].as_f64().unwrap_or(0.0),
        m["throughput_at_size"].as_f64().unwrap_or(0.0),
        m["qphh_at_size"].as_f64().unwrap_or(0.0),
    );
    ensure(
        p > 0.0 && t > 0.0 && ((p * t).sqrt() - q).abs() < 1e-6 * q,
        || format!("metrics: {m}; errors: {}", r["errors_by_kind"]),
    )?;
    let out = dbduel(&["check", "tpch", "--dsn", &dsn]);
    expect_code(
        &out,
        0,
        &format!("check after the throughput test:\n{}", text(&out)),
    )
}

/// A query past `--query-timeout` is reported as a timeout, the stream goes on, and the
/// metrics say the test is incomplete instead of computing Power@Size: the server's own limit
/// on PostgreSQL, the client's (an interrupt, a cancel) on SQLite and Firebird 3.
fn query_timeout(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "tpch_timeout");
    prepare(&dsn, target)?;
    let r = timed_out(env, &dsn, &format!("timeout-{}", target.label()), "0.001")?;
    let timeouts = r["errors_by_kind"]["statement_timeout"]
        .as_u64()
        .unwrap_or(0);
    ensure(timeouts > 0, || {
        format!("no timeout: {}", r["errors_by_kind"])
    })?;
    let m = &r["workload"]["metrics"];
    ensure(
        m["unanswered"].as_f64() == Some(timeouts as f64) && m.get("power_at_size").is_none(),
        || format!("metrics: {m}; errors: {}", r["errors_by_kind"]),
    )?;
    let out = dbduel(&["check", "tpch", "--dsn", &dsn]);
    expect_code(
        &out,
        0,
        &format!("check after the timeouts:\n{}", text(&out)),
    )
}

/// The power test under `--query-timeout SECONDS`, which some statement exceeds: exit 1.
fn timed_out(env: &Env, dsn: &str, name: &str, seconds: &str) -> Result<serde_json::Value, String> {
    let json = env.path(&format!("tpch-{name}.json"));
    let json_s = json.display().to_string();
    let run = ["run", "tpch", "--dsn", dsn, "--query-timeout", seconds];
    let out = dbduel(&[&run[..], &["--json", &json_s]].concat());
    expect_code(&out, 1, &format!("run tpch --query-timeout {seconds}"))?;
    read_result(&json)
}

/// A refresh function 2 past `--query-timeout` (a trigger makes every delete of ORDERS
/// slower than the limit) is reported as a timeout, and its pair's new orders are deleted all
/// the same: `check` finds the data as loaded.
fn failed_refresh_undone(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpch_rf2_undone");
    prepare(&dsn, Target::Postgres)?;
    session(&dsn)
        .batch(
            "CREATE FUNCTION slow_delete() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$; \
             CREATE TRIGGER slow_delete BEFORE DELETE ON orders \
             FOR EACH STATEMENT EXECUTE FUNCTION slow_delete()",
        )
        .map_err(|e| e.to_string())?;
    let r = timed_out(env, &dsn, "rf2-undone", "0.3")?;
    let errors = |name: &str| {
        r["transaction_types"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .and_then(|t| t["errors"].as_u64())
    };
    ensure(errors("RF1") == Some(0) && errors("RF2") == Some(1), || {
        format!("RF1 {:?} and RF2 {:?} errors", errors("RF1"), errors("RF2"))
    })?;
    let out = dbduel(&["check", "tpch", "--dsn", &dsn]);
    expect_code(
        &out,
        0,
        &format!("check after RF2's timeout:\n{}", text(&out)),
    )
}

fn queries_repeated(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "tpch_queries");
    prepare(&dsn, Target::Sqlite)?;
    let r = run(
        env,
        &dsn,
        "queries",
        &["--queries", "1,6,14", "--repeat", "3", "-M", "prepared"],
    )?;
    ensure(r["transactions"] == 9, || {
        format!("transactions: {}", r["transactions"])
    })?;
    for (name, n) in [("Q1", 3), ("Q6", 3), ("Q14", 3), ("Q2", 0), ("RF1", 0)] {
        ensure(count(&r, name) == n, || {
            format!("{name}: {}", count(&r, name))
        })?;
    }
    let m = &r["workload"]["metrics"];
    ensure(m.get("power_at_size").is_none(), || {
        "chosen queries are no power test".into()
    })?;
    let (low, median, high) = (
        m["Q06 min ms"].as_f64().unwrap_or(-1.0),
        m["Q06 median ms"].as_f64().unwrap_or(-1.0),
        m["Q06 max ms"].as_f64().unwrap_or(-1.0),
    );
    ensure(0.0 < low && low <= median && median <= high, || {
        format!("Q6's repeats: {m}")
    })
}

fn check_names_a_wrong_answer(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "tpch_damage");
    prepare(&dsn, Target::Sqlite)?;
    session(&dsn)
        .batch("UPDATE lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey = 1 AND l_linenumber = 1")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "tpch", "--dsn", &dsn]);
    expect_code(&out, 1, "check after a damaged line item")?;
    let all = text(&out);
    ensure(
        all.contains("FAILED Q1 ") && all.contains("column 3 (sum_qty)"),
        || format!("check does not name Q1's sum_qty:\n{all}"),
    )
}

/// A plan takes `workload = "tpch"`: one power test per engine, its figures in the store, and
/// the report draws each query's time per engine and profile.
fn sweep_plan(env: &Env) -> Result<(), String> {
    let plan = env.path("tpch-plan.toml");
    let toml = "engines = [\"sqlite\"]\nworkload = \"tpch\"\nclients = [1]\n\n[options]\nscale-factor = 0.01\n";
    std::fs::write(&plan, toml).map_err(|e| e.to_string())?;
    let results = env.path("tpch-plan.db").display().to_string();
    let plan = plan.display().to_string();
    let out = dbduel(&["sweep", &plan, "--results", &results]);
    expect_code(&out, 0, &format!("sweep of tpch:\n{}", text(&out)))?;
    let out = dbduel(&["results", "--results", &results, "show", "1"]);
    expect_code(&out, 0, "results show 1")?;
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("results show: {e}"))?;
    ensure(r["transactions"] == 24, || {
        format!("transactions: {}", r["transactions"])
    })?;
    let power = r["workload"]["metrics"]["power_at_size"]
        .as_f64()
        .unwrap_or(0.0);
    ensure(power > 0.0, || {
        format!("no Power@Size stored: {}", r["workload"])
    })?;
    let page = env.path("tpch-report.html").display().to_string();
    let out = dbduel(&["report", "--results", &results, "-o", &page]);
    expect_code(&out, 0, "report of the tpch sweep")?;
    let html = std::fs::read_to_string(&page).map_err(|e| e.to_string())?;
    ensure(
        html.contains("id=\"type-bars\"") && html.contains(">Q14<"),
        || "the report draws no per-query bars".into(),
    )
}
