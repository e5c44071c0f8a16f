//! The conformance suite: every workload variant on every engine target, in both protocols,
//! each run followed by `check`. Adding a workload or an engine adds no plumbing here.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, TARGETS, Target, dbduel, ensure, expect_code, read_result, with_env};

/// Variants that run a part of another variant's clients and nothing else: CH-benCHmark's
/// sides alone run the mix's own terminals or streams, whose statements the mix's trial runs
/// on every target (`ch::sides_in_one_sweep` runs them; the unit test of the engine seam runs
/// every variant).
const PARTS: [(&str, &str); 2] = [("ch", "terminals-alone"), ("ch", "streams-alone")];

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for entry in dbduel::workload::all() {
        for &target in TARGETS {
            for &variant in entry.variants {
                if PARTS.contains(&(entry.name, variant)) {
                    continue;
                }
                let name = format!("conformance::{}::{}::{variant}", entry.name, target.label());
                out.push(with_env(env, name, move |env| {
                    run_variant(env, target, entry.name, variant)
                }));
            }
        }
    }
    out
}

/// Prepare, run in the simple and the prepared protocol with 4 clients, check after each run.
fn run_variant(env: &Env, target: Target, workload: &str, variant: &str) -> Result<(), String> {
    let dsn = env.fresh_db(target, &format!("{workload}_{variant}"));
    let flags = target.flags();
    let mut prepare = vec!["prepare", workload, "--scale", "1", "--dsn", &dsn];
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    for protocol in ["simple", "prepared"] {
        let json = env.path(&format!(
            "{}-{workload}-{variant}-{protocol}.json",
            target.label()
        ));
        let json_s = json.display().to_string();
        // Ten transactions a client a protocol: conformance is about what runs and what
        // `check` finds, and its 198 trials were most of the suite's time while each ran a
        // second a protocol (a timed run lasts its second even when its transactions take a
        // millisecond). MariaDB plans the correlated probe's subquery as a full scan on MyISAM
        // and Aria (1.5 s a query here, more on a loaded machine), and CH-benCHmark's
        // analytical queries take seconds: these run two per client.
        let count = if variant == "probe_correlated" || variant == "ch" {
            "2"
        } else {
            "10"
        };
        let limit = ["-t", count];
        let mut run = vec![
            "run",
            workload,
            "--dsn",
            &dsn,
            "-c",
            "4",
            limit[0],
            limit[1],
            "-M",
            protocol,
            "-b",
            variant,
            "--max-tries",
            target.max_tries(),
            "--json",
            &json_s,
        ];
        run.extend(flags.iter().map(String::as_str));
        let out = dbduel(&run);
        expect_code(&out, 0, &format!("run -M {protocol}"))?;
        let r = read_result(&json)?;
        ensure(r["transactions"].as_u64().unwrap_or(0) > 0, || {
            format!("no transactions measured: {r}")
        })?;
        ensure(r["errors"] == 0, || {
            format!("errors: {}", r["errors_by_kind"])
        })?;
        ensure(r["workload"]["variant"] == variant, || {
            format!("variant: {}", r["workload"])
        })?;
        ensure(r["options"]["protocol"] == protocol, || {
            format!("protocol: {}", r["options"])
        })?;
        ensure(
            !r["engine"]["settings"]
                .as_object()
                .is_none_or(|s| s.is_empty()),
            || "no server settings".into(),
        )?;
        ensure(
            r["engine"]["database_size_bytes"].as_u64().unwrap_or(0) > 0,
            || "no database size".into(),
        )?;
        // Every run has its per-second windows, a run of a few queries at least one.
        let windows = r["windows"].as_array().map(Vec::len).unwrap_or(0);
        ensure(windows >= 1, || {
            format!(
                "{windows} per-second windows for a run of {} {}",
                limit[0], limit[1]
            )
        })?;
        let mut check = vec!["check", workload, "--dsn", &dsn];
        check.extend(flags.iter().map(String::as_str));
        expect_code(&dbduel(&check), 0, "check after the run")?;
    }
    let mut cleanup = vec!["cleanup", workload, "--dsn", &dsn];
    cleanup.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&cleanup), 0, "cleanup")
}
