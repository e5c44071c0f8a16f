//! What a run measures and when it stops: `-t` per client, the warm-up left out of the
//! figures, the open loop's pace and schedule lag (and a rate no client can keep), a run that
//! completed nothing exits 1, TPC-C's keying times longer than the run said first, and Ctrl-C
//! keeps the partial result.

use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, prepared_tpcb, read_result, run_json, trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 8] = [
        ("transactions_per_client", transactions_limit),
        ("warmup_is_excluded", warmup),
        ("open_loop_paces_and_reports_lag", open_loop),
        ("nothing_measured_exits_1", nothing_measured),
        ("spec_timing_shorter_than_keying_warns", spec_timing_short),
        ("ctrl_c_keeps_partial_result", ctrl_c),
        ("sigterm_keeps_partial_result", |env| {
            stopped_by(env, libc::SIGTERM)
        }),
        ("sighup_keeps_partial_result", |env| {
            stopped_by(env, libc::SIGHUP)
        }),
    ];
    trials_of(env, "measured", tests)
}

fn transactions_limit(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::MariaDb("InnoDB"), "tlimit")?;
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
    let dsn = prepared_tpcb(env, Target::Postgres, "warmup")?;
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

fn open_loop(env: &Env) -> Result<(), String> {
    let dsn = prepared_tpcb(env, Target::Postgres, "rate")?;
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
    let sqlite = prepared_tpcb(env, Target::Sqlite, "rate_unmet")?;
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
    let dsn = prepared_tpcb(env, Target::Sqlite, "nothing")?;
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

fn ctrl_c(env: &Env) -> Result<(), String> {
    stopped_by(env, libc::SIGINT)
}

/// A run on the temporary SQLite database stopped by `signal` (Ctrl-C, a service manager's
/// stop, a closed terminal) keeps what it measured and leaves no temporary file behind.
fn stopped_by(env: &Env, signal: i32) -> Result<(), String> {
    let json = env.path(&format!("interrupted-{signal}.json"));
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dbduel"))
        .args(["run", "tpcb", "-T", "60", "-c", "2", "-P", "1", "--json"])
        .arg(&json)
        .env("TMPDIR", tmp.path())
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
    unsafe { libc::kill(child.id() as i32, signal) };
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
    })?;
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    ensure(left.is_empty(), || {
        format!("left behind in TMPDIR: {left:?}")
    })
}
