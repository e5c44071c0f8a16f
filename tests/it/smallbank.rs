//! SmallBank beyond the conformance suite (which runs it on every target at serializable and
//! checks): its checks catch what isolation lets through. At the engine's default isolation
//! (PostgreSQL's read committed, InnoDB's repeatable read) four clients on two customers lose
//! updates, and `check` says money vanished or appeared; at serializable the same run keeps
//! every cent.
//! Damaged data fails the check by name, and bad options are refused.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, refusals, text, with_env};

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
