//! SmallBank beyond the conformance suite (which runs it on every target at serializable and
//! checks): its checks catch what isolation lets through. At the engine's default isolation
//! (PostgreSQL's read committed, InnoDB's repeatable read) four clients on two customers lose
//! updates, and `check` says money vanished or appeared; at serializable the same run keeps
//! every cent.
//! Damaged data fails the check by name, and bad options are refused. The pgbench scripts of
//! its transactions (bench/scripts/smallbank/, bench/vs-smallbank's floor) move the money each
//! is meant to move on dbduel's data.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, refusals, run_json, session, text, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 3] = [
        (
            "bad_isolation",
            &["run", "smallbank", "--isolation", "snapshot"],
            "--isolation",
        ),
        (
            "hot_set_of_one",
            &["run", "smallbank", "--hotspot", "1"],
            "--hotspot 1",
        ),
        (
            "share_over_100",
            &[
                "run",
                "smallbank",
                "--hotspot",
                "10",
                "--hotspot-share",
                "120",
            ],
            "--hotspot-share 120",
        ),
    ];
    let mut out = refusals("smallbank", refused);
    for target in [Target::Postgres, Target::MariaDb("InnoDB")] {
        out.push(with_env(
            env,
            format!(
                "smallbank::isolation_decides_lost_updates::{}",
                target.label()
            ),
            move |env| isolation_decides(env, target),
        ));
    }
    out.push(with_env(
        env,
        "smallbank::check_fails_on_damage",
        check_fails_on_damage,
    ));
    out.push(with_env(
        env,
        "smallbank::pgbench_scripts_move_the_money::postgres",
        pgbench_scripts,
    ));
    out
}

fn with_flags<'a>(args: &[&'a str], flags: &'a [String]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(flags.iter().map(String::as_str));
    v
}

/// A hot set of two customers, every transaction on them, four clients for three seconds.
fn contended_run(dsn: &str, flags: &[String], isolation: &str) -> Result<(), String> {
    let args = [
        "run",
        "smallbank",
        "--dsn",
        dsn,
        "-c",
        "4",
        "-T",
        "3",
        "--hotspot",
        "2",
        "--hotspot-share",
        "100",
        "--isolation",
        isolation,
        "--max-tries",
        "1000",
    ];
    let out = dbduel(&with_flags(&args, flags));
    expect_code(&out, 0, &format!("run at {isolation}"))
}

/// At the default isolation, contended runs lose updates: money vanishes or appears within a
/// few runs (each a few seconds; a run that happened to interleave safely is followed by
/// another, up to `TRIES`); at serializable the same run keeps every cent.
fn isolation_decides(env: &Env, target: Target) -> Result<(), String> {
    const TRIES: usize = 4;
    let flags = target.flags();
    let prepared = |isolation: &str| -> Result<String, String> {
        let dsn = env.fresh_db(target, &format!("smallbank_{isolation}"));
        let prepare = ["prepare", "smallbank", "--scale", "1", "--dsn", &dsn];
        expect_code(&dbduel(&with_flags(&prepare, &flags)), 0, "prepare")?;
        Ok(dsn)
    };
    let check = |dsn: &str| dbduel(&with_flags(&["check", "smallbank", "--dsn", dsn], &flags));

    let dsn = prepared("serializable")?;
    contended_run(&dsn, &flags, "serializable")?;
    let checked = check(&dsn);
    let all = text(&checked);
    expect_code(&checked, 0, "check after the serializable run")?;
    ensure(all.contains("money conserved"), || {
        format!("no money check:\n{all}")
    })?;

    let dsn = prepared("default")?;
    let mut last = String::new();
    for _ in 0..TRIES {
        contended_run(&dsn, &flags, "default")?;
        let checked = check(&dsn);
        last = text(&checked);
        if checked.status.code() == Some(1) {
            return ensure(
                last.contains(": lost updates (transactions wrote over changes they had not seen)")
                    && last.contains("runs at the engine's default isolation ran on this data"),
                || format!("check names no lost update:\n{last}"),
            );
        }
        expect_code(&checked, 0, "check after a run at the default isolation")?;
    }
    Err(format!(
        "{TRIES} contended runs at the default isolation lost no update:\n{last}"
    ))
}

/// `check smallbank` passes on a fresh load and fails, naming what is wrong, once a balance
/// is changed behind its back, a savings balance is below zero, or a row is missing.
fn check_fails_on_damage(env: &Env) -> Result<(), String> {
    let dsn = format!("sqlite://{}", env.path("smallbank-damage.db").display());
    let prepare = || {
        expect_code(
            &dbduel(&["prepare", "smallbank", "--dsn", &dsn]),
            0,
            "prepare",
        )
    };
    let check = || dbduel(&["check", "smallbank", "--dsn", &dsn]);
    prepare()?;
    expect_code(&check(), 0, "check on a fresh load")?;
    let damages = [
        (
            "UPDATE checking SET bal = bal - 130 WHERE custid = 7",
            "1.30 vanished: lost updates",
        ),
        (
            "UPDATE checking SET bal = bal + 500 WHERE custid = 7",
            "5.00 appeared: lost updates",
        ),
        (
            "UPDATE savings SET bal = -1 WHERE custid = 7",
            "1 savings balances below zero",
        ),
        (
            "DELETE FROM checking WHERE custid = 7",
            "100000 accounts, 100000 savings, 99999 checking",
        ),
    ];
    crate::env::damaged_fails_check("smallbank", &dsn, &damages)
}

/// The total of every balance, in cents.
fn total(dsn: &str) -> Result<i64, String> {
    let rows = session(dsn)
        .query_text("SELECT (SELECT sum(bal) FROM savings) + (SELECT sum(bal) FROM checking)")
        .map_err(|e| e.to_string())?;
    rows.first()
        .and_then(|r| r[0].as_i64())
        .ok_or_else(|| "no total".to_string())
}

/// bench/scripts/smallbank/ on dbduel's SmallBank data, run by dbduel as pgbench would run
/// them: the four that move money change the total by exactly their amounts times the
/// transactions each ran (no refusal or overdraft is possible on fresh balances of 10,000
/// dollars and more), and the two that only move it between customers (Amalgamate,
/// SendPayment) leave it unchanged while Amalgamate empties accounts.
fn pgbench_scripts(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "smallbank_scripts");
    let prepare = ["prepare", "smallbank", "--scale", "1", "--dsn", &dsn];
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let script = |name: &str| {
        format!(
            "{}/bench/scripts/smallbank/{name}.sql",
            env!("CARGO_MANIFEST_DIR")
        )
    };
    let run = |label: &str, names: &[&str]| {
        let files: Vec<String> = names.iter().map(|n| script(n)).collect();
        let mut args = vec![
            "run",
            "--dsn",
            &dsn,
            "-c",
            "2",
            "-t",
            "40",
            "-M",
            "prepared",
            "-D",
            "customers=100000",
        ];
        for f in &files {
            args.extend(["-f", f.as_str()]);
        }
        let r = run_json(env, label, &args, 0)?;
        let ran = |name: &str| {
            r["transaction_types"]
                .as_array()
                .and_then(|types| types.iter().find(|t| t["name"] == format!("{name}.sql")))
                .and_then(|t| t["transactions"].as_i64())
                .unwrap_or(0)
        };
        let counts: Vec<i64> = names.iter().map(|n| ran(n)).collect();
        ensure(
            r["errors"] == 0 && counts.iter().sum::<i64>() == 80 && counts.iter().all(|&n| n > 0),
            || format!("{label}: 80 transactions, none failed, every script's among them: {r}"),
        )?;
        Ok::<Vec<i64>, String>(counts)
    };
    let before = total(&dsn)?;
    let moving = [
        "deposit-checking",
        "transact-savings",
        "write-check",
        "balance",
    ];
    let n = run("smallbank_scripts_moving", &moving)?;
    let after = total(&dsn)?;
    // DepositChecking +1.30, TransactSavings -20.20, WriteCheck -5.00, Balance nothing.
    let expected = 130 * n[0] - 2020 * n[1] - 500 * n[2];
    ensure(after - before == expected, || {
        format!(
            "the total moved by {} cents, the scripts' amounts say {expected} ({n:?})",
            after - before
        )
    })?;
    run("smallbank_scripts_between", &["amalgamate", "send-payment"])?;
    let emptied = session(&dsn)
        .query_text("SELECT count(*) FROM savings WHERE bal = 0")
        .map_err(|e| e.to_string())?
        .first()
        .and_then(|r| r[0].as_i64())
        .unwrap_or(0);
    let last = total(&dsn)?;
    ensure(last == after && emptied > 0, || {
        format!(
            "money kept between customers ({after} then {last}) and savings emptied ({emptied})"
        )
    })
}
