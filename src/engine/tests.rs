//! Tests of the engine seam: placeholders and literals as every engine meets them, and the
//! test of "Adding an engine" (ARCHITECTURE.md): the toy engine `toylite` (`engine/toy.rs`,
//! one file and one registry line, as a contributor adds an engine) runs every workload
//! through the commands, in process: each registered workload variant, a pgbench-format
//! script and a declarative workload file, each prepared, run and checked, each of its
//! transaction types with its statements timed on the client; and TPC-H's power test, which has
//! no variants.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Parser;

use super::{Value, quote_standard, render_literals, split_placeholders};
use crate::cli::Cli;
use crate::{Outcome, workload};

/// One dbduel command, run in process; its outcome must be a success.
fn dbduel(args: &[&str]) {
    let cli = Cli::try_parse_from(std::iter::once("dbduel").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("dbduel {}: {e}", args.join(" ")));
    match crate::run(cli, Arc::new(AtomicBool::new(false))) {
        Ok(Outcome::Success) => {}
        other => panic!("dbduel {}: {other:?}", args.join(" ")),
    }
}

/// Run `workload` (a name, a script or a workload file) on `dsn` for a few transactions (the
/// unit tests share the machine), then check it.
fn run_and_check(workload: &str, variant: Option<&str>, dsn: &str, json: &Path) {
    let json_s = json.display().to_string();
    let mut run = vec![
        "run", workload, "--dsn", dsn, "-c", "2", "-t", "10", "--json", &json_s,
    ];
    run.extend(variant.iter().flat_map(|v| ["-b", v]));
    dbduel(&run);
    let text = std::fs::read_to_string(json).expect("the run wrote its result");
    let r: serde_json::Value = serde_json::from_str(&text).expect("a JSON result");
    assert_eq!(r["engine"]["name"], "toylite", "{workload}");
    // Each client its 10 transactions: the 2 asked, but CH's sides alone, which run the mix's
    // one terminal or its one stream.
    let clients = if variant.is_some_and(|v| v.ends_with("-alone")) {
        1
    } else {
        2
    };
    assert_eq!(
        r["options"]["clients"], clients,
        "{workload}: {}",
        r["options"]
    );
    assert_eq!(r["transactions"], clients * 10, "{workload}: {r}");
    assert_eq!(r["errors"], 0, "{workload}: {}", r["errors_by_kind"]);
    statements_timed(&r, workload);
    if !workload.ends_with(".sql") {
        dbduel(&["check", workload, "--dsn", dsn]);
    }
}

/// Every transaction type that ran has statements timed on the client: at least one call per
/// transaction among them.
fn statements_timed(r: &serde_json::Value, workload: &str) {
    let statements = r["statement_latencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for t in r["transaction_types"].as_array().into_iter().flatten() {
        if t["transactions"].as_u64().unwrap_or(0) == 0 {
            continue;
        }
        let calls: f64 = statements
            .iter()
            .filter(|s| s["transaction"] == t["name"])
            .filter_map(|s| s["calls_per_transaction"].as_f64())
            .sum();
        // Summed fractions (YCSB's update is one of ten statements, one per field) may fall
        // short of 1 by a rounding.
        assert!(
            calls >= 1.0 - 1e-9,
            "{workload}: {} has no statement timed: {statements:?}",
            t["name"]
        );
    }
}

#[test]
fn every_workload_runs_on_an_engine_added_in_one_file() {
    // The unit tests run side by side, and some measure a busy child's CPU time: this one
    // yields the processor to them. On Linux a thread's nice value is its own, and the
    // threads it starts (the run's clients) inherit it.
    // SAFETY: setpriority on the calling thread's id touches no memory of this process.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dsn = |name: &str| format!("toylite://{}", dir.path().join(name).display());
    let mut ran = 0;
    for entry in workload::all() {
        // A workload's variants run one after another on its data, each checked after.
        let db = dsn(&format!("{}.db", entry.name));
        if !entry.variants.is_empty() {
            dbduel(&["prepare", entry.name, "--scale", "1", "--dsn", &db]);
        }
        for &variant in entry.variants {
            let json = dir.path().join(format!("{}-{variant}.json", entry.name));
            run_and_check(entry.name, Some(variant), &db, &json);
            ran += 1;
        }
    }
    assert!(ran >= 20, "{ran} workload variants");
    // TPC-H has no variants: its streams fix the clients and their work (the power test).
    let db = dsn("tpch.db");
    dbduel(&["prepare", "tpch", "--scale-factor", "0.01", "--dsn", &db]);
    let json = dir.path().join("tpch.json");
    let json_s = json.display().to_string();
    dbduel(&["run", "tpch", "--dsn", &db, "--json", &json_s]);
    let text = std::fs::read_to_string(&json).expect("the run wrote its result");
    let r: serde_json::Value = serde_json::from_str(&text).expect("a JSON result");
    assert_eq!(r["transactions"], 24, "tpch: {r}");
    assert_eq!(r["errors"], 0, "tpch: {}", r["errors_by_kind"]);
    statements_timed(&r, "tpch");
    dbduel(&["check", "tpch", "--dsn", &db]);
    let root = env!("CARGO_MANIFEST_DIR");
    let tpcb = dsn("tpcb.db");
    let script = format!("{root}/bench/scripts/tpcb-like.sql");
    run_and_check(&script, None, &tpcb, &dir.path().join("script.json"));
    let file = format!("{root}/workloads/seed002-thetable.toml");
    let db = dsn("thetable.db");
    dbduel(&["prepare", &file, "--dsn", &db]);
    run_and_check(&file, None, &db, &dir.path().join("thetable.json"));
}

#[test]
fn placeholders_outside_quotes_only() {
    assert_eq!(
        split_placeholders("a = ? AND b = '?' AND c = ?"),
        vec!["a = ", " AND b = '?' AND c = ", ""]
    );
}

#[test]
fn literals_are_quoted() {
    let parts = split_placeholders("INSERT INTO t VALUES (?, ?, ?)");
    let mut out = String::new();
    render_literals(
        &parts,
        &[Value::Int(-3), Value::Text("it's".into()), Value::Null],
        &mut out,
        quote_standard,
    );
    assert_eq!(out, "INSERT INTO t VALUES (-3, 'it''s', NULL)");
}

/// Opening an engine reads its DSN without connecting: a parameter it does not take is refused
/// by name with those it does, and `--table-engine` everywhere but mysql://.
#[test]
fn engines_refuse_what_they_do_not_take() {
    let opened = |text: &str, opts: &super::EngineOptions| {
        let dsn = super::parse_dsn(text).unwrap();
        super::open(&dsn, opts, super::Protocol::Simple).map(|_| ())
    };
    let plain = super::EngineOptions::default();
    for (dsn, accepts) in [
        (
            "postgres://u@h/db?sslmod=require",
            "postgres accepts host, port,",
        ),
        (
            "mysql://u@h/db?sslmode=1",
            "mysql accepts socket, ssl-mode,",
        ),
        (
            "firebird://u@h/db?isolaton=1",
            "firebird accepts isolation, lock_wait, connect_timeout",
        ),
        ("sqlite:///tmp/x.db?jurnal_mode=wal", "sqlite accepts "),
    ] {
        let e = opened(dsn, &plain).unwrap_err().to_string();
        assert!(
            e.contains("unknown parameter '") && e.contains(accepts),
            "{e}"
        );
    }
    let aria = super::EngineOptions {
        table_engine: Some("Aria".into()),
        ..Default::default()
    };
    for dsn in [
        "postgres://u@h/db",
        "firebird://u@h/db",
        "sqlite:///tmp/x.db",
    ] {
        let e = opened(dsn, &aria).unwrap_err().to_string();
        assert!(e.contains("--table-engine applies to mysql:// only"), "{e}");
    }
    assert!(opened("mysql://u@h/db", &aria).is_ok());
}
