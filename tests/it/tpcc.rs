//! TPC-C beyond the conformance suite (which loads one warehouse on every target, runs and
//! checks): bad TPC-C options are refused, two warehouses load in parallel and run at
//! serializable on PostgreSQL, `check tpcc` fails once an order is deleted by hand,
//! `--spec-timing` paces terminals by the specification's keying and think times, and
//! `--procedures` runs one call per transaction on PostgreSQL, MariaDB and Firebird (refused on
//! SQLite, and on a database prepared without them), where a conflict met inside a Firebird
//! procedure is retryable.

use std::sync::Arc;

use dbduel::engine::{DbError, ErrorClass};
use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, read_result, refusals, session, text, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 5] = [
        (
            "warehouses_zero",
            &["run", "tpcc", "--warehouses", "0"],
            "--warehouses must be at least 1",
        ),
        (
            "unknown_isolation",
            &["run", "tpcc", "--isolation", "snapshot"],
            "--isolation 'snapshot': use default or serializable",
        ),
        (
            "load_workers_zero",
            &[
                "prepare",
                "tpcc",
                "--dsn",
                "sqlite:///nonexistent/x.db",
                "--load-workers",
                "0",
            ],
            "--load-workers must be at least 1",
        ),
        (
            "spec_timing_with_rate",
            &["run", "tpcc", "--spec-timing", "-R", "10"],
            "drop --rate",
        ),
        (
            "procedures_on_sqlite",
            &["run", "tpcc", "--procedures", "-T", "1"],
            "SQLite has no stored procedures",
        ),
    ];
    let mut out = refusals("tpcc", refused);
    out.push(with_env(
        env,
        "tpcc::postgres_two_warehouses_serializable_then_an_order_deleted",
        two_warehouses_then_delete,
    ));
    out.push(with_env(
        env,
        "tpcc::spec_timing_paces_terminals",
        spec_timing,
    ));
    out.push(with_env(
        env,
        "tpcc::an_update_that_changes_no_row_fails_the_transaction::sqlite",
        update_skipped,
    ));
    let no_more: Check = |_| Ok(());
    for (name, target, more) in [
        ("postgres", Target::Postgres, no_more),
        ("mariadb_innodb", Target::MariaDb("InnoDB"), no_more),
        (
            "firebird",
            Target::Firebird,
            (|dsn| {
                conflict_inside_a_procedure(dsn)?;
                missed_row_inside_a_procedure(dsn)
            }) as Check,
        ),
    ] {
        out.push(with_env(
            env,
            format!("tpcc::{name}_procedures_one_call_per_transaction"),
            move |env| procedures(env, target, more),
        ));
    }
    out
}

/// A further check on a database prepared with `--procedures`, given its DSN.
type Check = fn(&str) -> Result<(), String>;

/// `--procedures` (PostgreSQL functions, MariaDB and Firebird procedures): prepare installs
/// the five, a run in each protocol (prepared, simple) calls one per transaction (one
/// statement each), the 1% New-Order rollback is counted as a rollback, the result says
/// procedures on, and the consistency conditions hold afterwards; a run without
/// `--procedures` on the same database records procedures off, and once the recorded
/// fingerprint differs from this dbduel's code, `run --procedures` is refused. `more` checks
/// what is the target's own.
fn procedures(env: &Env, target: Target, more: Check) -> Result<(), String> {
    let dsn = env.fresh_db(target, "tpcc_procs");
    let prepare = dbduel(&["prepare", "tpcc", "-w", "1", "--procedures", "--dsn", &dsn]);
    expect_code(&prepare, 0, "prepare --procedures")?;
    more(&dsn)?;
    let json = env.path(&format!("tpcc-procs-{}.json", target.label()));
    let json_s = json.display().to_string();
    for protocol in ["prepared", "simple"] {
        procedures_run(&dsn, &json_s, protocol)?;
    }
    let run = dbduel(&[
        "run", "tpcc", "--dsn", &dsn, "-c", "2", "-T", "1", "--json", &json_s,
    ]);
    expect_code(&run, 0, "run without --procedures")?;
    let r = read_result(&json)?;
    ensure(r["workload"]["settings"]["procedures"] == "off", || {
        format!("settings: {}", r["workload"]["settings"])
    })?;
    let (txns, queries) = (r["transactions"].as_u64(), r["queries"].as_u64());
    ensure(queries > txns, || {
        format!("client-side statements: {queries:?} statements for {txns:?} transactions")
    })?;
    expect_code(&check(&dsn), 0, "check after both runs")?;
    // The fingerprint of the installed code, as another dbduel's would differ: refused.
    session(&dsn)
        .batch("UPDATE dbduel_facts SET fact = 'other' WHERE name = 'tpcc.procedures'")
        .map_err(|e| e.to_string())?;
    let out = dbduel(&["run", "tpcc", "--procedures", "--dsn", &dsn, "-T", "1"]);
    expect_code(&out, 2, "run --procedures after another version's prepare")?;
    let all = text(&out);
    ensure(
        all.contains("another version's") && all.contains("prepare with --procedures first"),
        || format!("not refused as another version's procedures:\n{all}"),
    )
}

/// Firebird: a Payment called while another transaction holds an uncommitted update of its
/// warehouse waits, and once that one commits fails inside the procedure with an update
/// conflict, classified as a serialization failure (retried by a run) as outside one. The
/// update changes nothing, so the consistency conditions still hold.
fn conflict_inside_a_procedure(dsn: &str) -> Result<(), String> {
    let fail = |e: DbError| e.to_string();
    let mut holder = session(dsn);
    holder.begin(true).map_err(fail)?;
    holder
        .batch("UPDATE warehouse SET w_ytd = w_ytd WHERE w_id = 1")
        .map_err(fail)?;
    let caller_dsn = dsn.to_string();
    let caller = std::thread::spawn(move || {
        session(&caller_dsn)
            .query_text("SELECT customer FROM tpcc_payment(1, 1, 1, 1, 1, '', 10.0)")
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    let waited = !caller.is_finished();
    holder.commit().map_err(fail)?;
    let result = caller
        .join()
        .map_err(|_| "the caller panicked".to_string())?;
    ensure(waited, || {
        "the Payment did not wait for the warehouse row another transaction holds".into()
    })?;
    match result {
        Err(e) if e.class == ErrorClass::Serialization && e.message.contains("TPCC_PAYMENT") => {
            Ok(())
        }
        other => Err(format!(
            "a conflict inside tpcc_payment: expected a serialization failure naming the procedure, got {other:?}"
        )),
    }
}

/// Firebird: a Payment whose warehouse UPDATE changes no row (here: warehouse 9 does not
/// exist) fails inside the procedure as `missed_row` rather than going on to commit in part.
fn missed_row_inside_a_procedure(dsn: &str) -> Result<(), String> {
    let result =
        session(dsn).query_text("SELECT customer FROM tpcc_payment(9, 1, 9, 1, 1, '', 10.0)");
    match result {
        Err(e)
            if e.class == ErrorClass::MissedRow
                && e.message
                    .contains("UPDATE warehouse matched 0 rows instead of 1") =>
        {
            Ok(())
        }
        other => Err(format!(
            "a Payment of a missing warehouse: expected missed_row from tpcc_payment, got {other:?}"
        )),
    }
}

/// An UPDATE that changes no row without an error (a trigger makes SQLite skip the warehouse
/// row, as Firebird 3.0.11 has been seen to skip a hot row after a lock wait) fails its
/// Payment as `missed_row`, and the transaction is rolled back: W_YTD = sum(D_YTD) and the
/// other conditions still hold. Without the client's check, each Payment would commit its
/// district's D_YTD without the warehouse's W_YTD.
fn update_skipped(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Sqlite, "tpcc_skipped");
    let prepare = dbduel(&["prepare", "tpcc", "-w", "1", "--dsn", &dsn]);
    expect_code(&prepare, 0, "prepare")?;
    session(&dsn)
        .batch("CREATE TRIGGER skip_warehouse BEFORE UPDATE ON warehouse BEGIN SELECT RAISE(IGNORE); END")
        .map_err(|e| e.to_string())?;
    let json = env.path("tpcc-skipped.json");
    let json_s = json.display().to_string();
    // One try each: a retry meets the same trigger (tpcc retries 100 times by default).
    let run = dbduel(&[
        "run",
        "tpcc",
        "--dsn",
        &dsn,
        "-t",
        "100",
        "--seed",
        "5",
        "--max-tries",
        "1",
        "--json",
        &json_s,
    ]);
    // Failed transactions: exit code 1, the result written.
    expect_code(&run, 1, "run")?;
    let r = read_result(&json)?;
    let kinds = r["errors_by_kind"].as_object().cloned().unwrap_or_default();
    let missed = kinds
        .get("missed_row")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    ensure(missed > 0 && kinds.len() == 1, || {
        format!("errors: {}\n{}", r["errors_by_kind"], text(&run))
    })?;
    let payments = r["transaction_types"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "payment").cloned())
        .unwrap_or_default();
    ensure(payments["transactions"].as_u64() == Some(0), || {
        format!("a Payment committed without its warehouse: {payments}")
    })?;
    expect_code(&check(&dsn), 0, "check after the skipped updates")
}

/// One `run --procedures` of 4 clients, 200 transactions each, in `protocol`, and its result's
/// checks. The seed fixes every draw (a retry does not draw again), so how many New-Orders end
/// on an unused item is the same on every engine and in every run, whatever the speed: a
/// rollback the procedures fail to report cannot hide in a short run's luck.
fn procedures_run(dsn: &str, json_s: &str, protocol: &str) -> Result<(), String> {
    let run = dbduel(&[
        "run",
        "tpcc",
        "--procedures",
        "--dsn",
        dsn,
        "-c",
        "4",
        "-t",
        "200",
        "--seed",
        "18",
        "-M",
        protocol,
        "--json",
        json_s,
    ]);
    expect_code(&run, 0, &format!("run --procedures -M {protocol}"))?;
    let r = read_result(std::path::Path::new(json_s))?;
    let w = &r["workload"];
    ensure(w["settings"]["procedures"] == "on", || {
        format!("settings: {}", w["settings"])
    })?;
    let (txns, queries) = (r["transactions"].as_u64(), r["queries"].as_u64());
    ensure(txns.is_some_and(|t| t > 0) && txns == queries, || {
        format!("{txns:?} transactions sent {queries:?} statements: not one call each")
    })?;
    let types = r["transaction_types"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for name in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        let done = types
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["transactions"].as_u64());
        ensure(done.is_some_and(|n| n > 0), || {
            format!(
                "{name}: {done:?} transactions in {}",
                r["transaction_types"]
            )
        })?;
    }
    let errors = r["errors"].as_u64();
    ensure(errors == Some(0), || format!("{errors:?} errors"))?;
    let new_orders = &types[0];
    let (done, rolled) = (
        new_orders["transactions"].as_f64().unwrap_or(0.0),
        new_orders["rollbacks"].as_f64().unwrap_or(-1.0),
    );
    // 1% of New-Orders end on an unused item: with this seed, 2 of the 360 (as the client-side
    // statements count them too), and far from every one.
    ensure(rolled >= 1.0 && rolled <= 0.04 * done, || {
        format!("{rolled} of {done} New-Orders rolled back (about 1% expected)")
    })?;
    let nopm = w["metrics"]["nopm"].as_f64().unwrap_or(0.0);
    ensure(
        nopm > 0.0 && w["metrics"]["tpmC"].as_f64() > Some(nopm),
        || format!("metrics: {}", w["metrics"]),
    )?;
    expect_code(
        &check(dsn),
        0,
        &format!("check after the -M {protocol} run"),
    )
}

/// With keying and think times (clause 5.2.5.7) a terminal waits at least 2 s before each
/// transaction, and 18 s before a New-Order: a 6-second run of 20 terminals completes a few
/// transactions, no New-Order, and still ends on time.
fn spec_timing(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpcc_timing");
    let prepare = dbduel(&["prepare", "tpcc", "--warehouses", "1", "--dsn", &dsn]);
    expect_code(&prepare, 0, "prepare --warehouses 1")?;
    let json = env.path("tpcc-timing.json");
    let json_s = json.display().to_string();
    let started = std::time::Instant::now();
    let run = dbduel(&[
        "run",
        "tpcc",
        "--dsn",
        &dsn,
        "-c",
        "20",
        "-T",
        "6",
        "--spec-timing",
        "--json",
        &json_s,
    ]);
    let wall = started.elapsed().as_secs_f64();
    expect_code(&run, 0, "run --spec-timing")?;
    ensure(wall < 15.0, || {
        format!("a 6-second run took {wall:.1} s: pauses do not end with the run")
    })?;
    let r = read_result(&json)?;
    ensure(r["workload"]["settings"]["spec_timing"] == "on", || {
        format!("settings: {}", r["workload"]["settings"])
    })?;
    let done = r["transactions"].as_u64().unwrap_or(u64::MAX);
    ensure((1..=60).contains(&done), || {
        format!("20 paced terminals completed {done} transactions in 6 s (expected 1 to 60)")
    })?;
    let new_orders = r["transaction_types"]
        .as_array()
        .and_then(|types| types.iter().find(|t| t["name"] == "new_order"))
        .map_or(0, |t| t["transactions"].as_u64().unwrap_or(0));
    ensure(new_orders == 0, || {
        format!("{new_orders} New-Orders completed inside their 18 s keying time")
    })?;
    expect_code(&check(&dsn), 0, "check after the paced run")?;
    // Prepared without --procedures: a run with them is refused before it starts.
    let out = dbduel(&["run", "tpcc", "--procedures", "--dsn", &dsn, "-T", "1"]);
    expect_code(
        &out,
        2,
        "run --procedures on a database prepared without them",
    )?;
    let all = text(&out);
    ensure(all.contains("prepare with --procedures first"), || {
        format!("message lacks 'prepare with --procedures first':\n{all}")
    })
}

fn check(dsn: &str) -> std::process::Output {
    dbduel(&["check", "tpcc", "--dsn", dsn])
}

fn two_warehouses_then_delete(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpcc_two");
    let prepare = dbduel(&[
        "prepare",
        "tpcc",
        "--warehouses",
        "2",
        "--load-workers",
        "3",
        "--dsn",
        &dsn,
    ]);
    expect_code(&prepare, 0, "prepare --warehouses 2")?;
    let json = env.path("tpcc-two.json");
    let json_s = json.display().to_string();
    let run = dbduel(&[
        "run",
        "tpcc",
        "--dsn",
        &dsn,
        "-c",
        "4",
        "-T",
        "2",
        "-M",
        "prepared",
        "--isolation",
        "serializable",
        "--max-tries",
        "1000",
        "--json",
        &json_s,
    ]);
    expect_code(&run, 0, "run --isolation serializable")?;
    let summary = text(&run);
    ensure(summary.contains("nopm") && summary.contains("tpmC"), || {
        format!("the summary lacks NOPM and tpmC:\n{summary}")
    })?;
    let r = read_result(&json)?;
    let w = &r["workload"];
    ensure(
        w["scale"] == 2 && w["settings"]["warehouses"] == "2",
        || format!("workload: {w}"),
    )?;
    ensure(r["engine"]["isolation"] == "serializable", || {
        format!("isolation: {}", r["engine"])
    })?;
    let new_orders = &r["transaction_types"][0];
    ensure(new_orders["name"] == "new_order", || {
        format!("types: {}", r["transaction_types"])
    })?;
    let (done, rolled) = (
        new_orders["transactions"].as_f64().unwrap_or(0.0),
        new_orders["rollbacks"].as_f64().unwrap_or(-1.0),
    );
    let minutes = r["duration_s"].as_f64().unwrap_or(0.0) / 60.0;
    let nopm = w["metrics"]["nopm"].as_f64().unwrap_or(0.0);
    ensure(
        done > 0.0 && (nopm - (done - rolled) / minutes).abs() < 1e-6 * nopm.max(1.0),
        || format!("nopm {nopm} from {done} new orders ({rolled} rolled back) in {minutes} min"),
    )?;
    expect_code(&check(&dsn), 0, "check after the run")?;

    // Delete district 1's latest order with its lines and its NEW-ORDER row, as a bad
    // transaction would have: D_NEXT_O_ID no longer matches (condition 2).
    let mut s = session(&dsn);
    let deleted = "DELETE FROM {t} WHERE {p}_w_id = 1 AND {p}_d_id = 1 AND {p}_o_id = (SELECT d_next_o_id - 1 FROM district WHERE d_w_id = 1 AND d_id = 1)";
    for (table, prefix) in [("order_line", "ol"), ("new_order", "no")] {
        s.batch(&deleted.replace("{t}", table).replace("{p}", prefix))
            .map_err(|e| e.to_string())?;
    }
    s.batch("DELETE FROM orders WHERE o_w_id = 1 AND o_d_id = 1 AND o_id = (SELECT d_next_o_id - 1 FROM district WHERE d_w_id = 1 AND d_id = 1)")
        .map_err(|e| e.to_string())?;
    let out = check(&dsn);
    expect_code(&out, 1, "check after deleting an order")?;
    let all = text(&out);
    ensure(
        all.contains("FAILED") && all.contains("district 1/1"),
        || format!("check does not name the district:\n{all}"),
    )?;

    // A NEW-ORDER row gone from the middle of district 2 breaks condition 3.
    s.batch("DELETE FROM new_order WHERE no_w_id = 2 AND no_d_id = 2 AND no_o_id = 2500")
        .map_err(|e| e.to_string())?;
    let all = text(&check(&dsn));
    ensure(
        all.lines()
            .any(|l| l.starts_with("FAILED") && l.contains("3:") && l.contains("district 2/2")),
        || format!("condition 3 does not fail:\n{all}"),
    )
}
