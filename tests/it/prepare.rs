//! Interrupted prepares: on every engine and every workload that prepares data, `run` and
//! `check` refuse data whose `prepare` did not finish, and `prepare` again makes it whole.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use dbduel::engine::EngineOptions;
use dbduel::workload::WorkloadOptions;
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, text, with_env};

const REFUSAL: &str = "prepare did not finish: run it again";

/// A workload file whose one table is large enough to be interrupted on every engine.
const CUSTOM: &str = "name = \"halfway\"\n[[table]]\nname = \"halfway_t\"\nrows = 30000\nprimary_key = [\"id\"]\ncolumns = [{ name = \"id\", type = \"int\", gen = { kind = \"sequence\" } }]\n[[query]]\nname = \"count\"\nsql = \"SELECT count(*) FROM halfway_t\"\n";

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let targets = [
        Target::Sqlite,
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ];
    let workloads = [
        "tpcb",
        "oltp_read_write",
        "probe_sequence",
        "tpcc",
        "custom",
    ];
    let mut out = Vec::new();
    for target in targets {
        for workload in workloads {
            let name = format!("prepare::interrupted::{workload}::{}", target.label());
            out.push(with_env(env, name, move |env| {
                interrupted(env, target, workload)
            }));
        }
    }
    out.push(with_env(
        env,
        "prepare::killed_tpcb_prepare_is_refused_on_postgres",
        killed,
    ));
    out
}

/// The workload's name on the command line (a file of its own per target for `custom`).
fn command_name(env: &Env, target: Target, workload: &str) -> String {
    if workload != "custom" {
        return workload.to_string();
    }
    let path = env.path(&format!("halfway-{}.toml", target.label()));
    std::fs::write(&path, CUSTOM).expect("write the workload file");
    path.display().to_string()
}

/// The sizes of a complete, small prepare (the interrupted one loads more).
fn size_flags(workload: &str) -> Vec<&'static str> {
    match workload {
        "oltp_read_write" | "probe_sequence" => vec!["--table-size", "1000"],
        _ => vec![],
    }
}

/// Interrupt a prepare (Ctrl-C's flag, raised from the start: the first table's load stops
/// after its first batch), then: `run` and `check` refuse with one line, exit 2; a complete
/// `prepare` afterwards lets both work.
fn interrupted(env: &Env, target: Target, workload: &str) -> Result<(), String> {
    let name = command_name(env, target, workload);
    let dsn = env.fresh_db(target, &format!("halfway_{workload}"));
    let entry = dbduel::workload::find(&name).map_err(|e| e.to_string())?;
    let mut opts = WorkloadOptions {
        scale: 1,
        ..WorkloadOptions::default()
    };
    if size_flags(workload).len() == 2 {
        opts.params.insert("table_size".into(), "100000".into());
    }
    let engine = EngineOptions {
        table_engine: target.flags().get(1).cloned(),
        ..EngineOptions::default()
    };
    let parsed = dbduel::engine::parse_dsn(&dsn).map_err(|e| e.to_string())?;
    let stop = AtomicBool::new(true);
    match dbduel::point::prepare(&parsed, &engine, entry, &opts, &stop, true) {
        Err(dbduel::Error::Interrupted) => {}
        other => return Err(format!("the prepare was not interrupted: {other:?}")),
    }
    let flags = target.flags();
    let with = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        v.extend(flags.iter().cloned());
        v
    };
    let run = with(&["run", &name, "--dsn", &dsn, "-T", "1"]);
    let check = with(&["check", &name, "--dsn", &dsn]);
    for (what, args) in [("run", &run), ("check", &check)] {
        let out = dbduel(args);
        expect_code(&out, 2, &format!("{what} after an interrupted prepare"))?;
        let said = text(&out);
        ensure(
            said.contains(REFUSAL) && said.trim().lines().count() == 1,
            || format!("{what} did not refuse in one line:\n{said}"),
        )?;
    }
    // TPC-C's complete load is long on a server: its refusal is what this trial is for there.
    if workload == "tpcc" && !matches!(target, Target::Sqlite) {
        return Ok(());
    }
    let mut prepare = with(&["prepare", &name, "--dsn", &dsn]);
    prepare.extend(size_flags(workload).iter().map(|f| f.to_string()));
    expect_code(&dbduel(&prepare), 0, "prepare again")?;
    let mut run = run;
    run.extend(["--max-tries", target.max_tries()].map(String::from));
    expect_code(&dbduel(&run), 0, "run after prepare")?;
    expect_code(&dbduel(&check), 0, "check after prepare")?;
    let cleanup = with(&["cleanup", &name, "--dsn", &dsn]);
    expect_code(&dbduel(&cleanup), 0, "cleanup")
}

/// `prepare tpcb -s 20` killed (SIGKILL) while it loads the accounts: `run` and `check`
/// refuse, rather than measure a scale of 20 over a part of its accounts.
fn killed(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "killed_prepare");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["prepare", "tpcb", "-s", "20", "--dsn", &dsn])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut s = crate::env::session(&dsn);
    let deadline = Instant::now() + Duration::from_secs(60);
    // The tellers are committed before the accounts' load starts.
    while s
        .query_text("SELECT count(*) FROM pgbench_tellers")
        .ok()
        .and_then(|r| r.first().and_then(|r| r[0].as_i64()))
        != Some(200)
    {
        ensure(Instant::now() < deadline, || {
            "the prepare never loaded its tellers".into()
        })?;
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().map_err(|e| e.to_string())?;
    let status = child.wait().map_err(|e| e.to_string())?;
    ensure(status.code().is_none(), || {
        format!("the prepare ended on its own before the kill: {status}")
    })?;
    for args in [
        vec!["run", "tpcb", "--dsn", &dsn, "-T", "1"],
        vec!["check", "tpcb", "--dsn", &dsn],
    ] {
        let out = dbduel(&args);
        expect_code(&out, 2, &format!("{} after a killed prepare", args[0]))?;
        ensure(text(&out).contains(REFUSAL), || text(&out))?;
    }
    Ok(())
}
