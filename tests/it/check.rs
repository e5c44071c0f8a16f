//! `dbduel check` catches damaged data: a transaction applied in part (tpcb's balances no
//! longer agree) and an index that no longer matches its rows (sysbench's), each named, exit 1.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, prepared_tpcb, session, text, trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut tests: Vec<(String, Test)> = Vec::new();
    for (label, t) in [
        ("sqlite", half_applied_sqlite as Test),
        ("postgres", half_applied_pg),
        ("mariadb", half_applied_maria),
    ] {
        tests.push((
            format!("check_fails_on_half_applied_transaction::{label}"),
            t,
        ));
    }
    for (label, t) in [
        ("sqlite", broken_index_sqlite as Test),
        ("postgres", broken_index_pg),
    ] {
        tests.push((format!("check_fails_on_inconsistent_index::{label}"), t));
    }
    trials_of(env, "check", tests)
}

/// Apply part of a transaction by hand, then check must fail (exit 1) naming the invariant.
fn half_applied(env: &Env, target: Target) -> Result<(), String> {
    let dsn = prepared_tpcb(env, target, "half")?;
    expect_code(
        &dbduel(&["run", "tpcb", "--dsn", &dsn, "-T", "1"]),
        0,
        "run",
    )?;
    expect_code(
        &dbduel(&["check", "tpcb", "--dsn", &dsn]),
        0,
        "check before damage",
    )?;
    // The account moved, the history row was never written.
    session(&dsn)
        .batch("UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid = 1")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&out, 1, "check after a half-applied transaction")?;
    ensure(text(&out).contains("FAILED accounts = history"), || {
        text(&out)
    })?;
    // Repair the accounts, then move a teller alone.
    let mut s = session(&dsn);
    s.batch("UPDATE pgbench_accounts SET abalance = abalance - 7 WHERE aid = 1")
        .map_err(|e| e.message)?;
    s.batch("UPDATE pgbench_tellers SET tbalance = tbalance + 7 WHERE tid = 1")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "tpcb", "--dsn", &dsn]);
    expect_code(&out, 1, "check after a teller-only update")?;
    ensure(text(&out).contains("FAILED tellers = branches"), || {
        text(&out)
    })
}

fn half_applied_sqlite(env: &Env) -> Result<(), String> {
    half_applied(env, Target::Sqlite)
}

fn half_applied_pg(env: &Env) -> Result<(), String> {
    half_applied(env, Target::Postgres)
}

fn half_applied_maria(env: &Env) -> Result<(), String> {
    half_applied(env, Target::MariaDb("InnoDB"))
}

/// An index that no longer matches its rows: sysbench's check must fail (exit 1) naming it.
fn broken_index(env: &Env, target: Target, damage: &[&str]) -> Result<(), String> {
    let dsn = env.fresh_db(target, "broken_index");
    let prepare = [
        "prepare",
        "oltp_read_write",
        "--dsn",
        &dsn,
        "--table-size",
        "2000",
    ];
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    expect_code(
        &dbduel(&["check", "oltp_read_write", "--dsn", &dsn]),
        0,
        "check before damage",
    )?;
    let mut s = session(&dsn);
    for sql in damage {
        s.batch(sql).map_err(|e| format!("{sql}: {}", e.message))?;
    }
    drop(s);
    let out = dbduel(&["check", "oltp_read_write", "--dsn", &dsn]);
    expect_code(&out, 1, "check after damaging an index")?;
    ensure(text(&out).contains("FAILED sbtest1 indexes"), || text(&out))
}

/// SQLite: the schema is rewritten to say k_1 indexes c, while its entries hold k.
fn broken_index_sqlite(env: &Env) -> Result<(), String> {
    broken_index(
        env,
        Target::Sqlite,
        &[
            "PRAGMA writable_schema = ON",
            "UPDATE sqlite_schema SET sql = 'CREATE INDEX k_1 ON sbtest1(c)' WHERE name = 'k_1'",
            "PRAGMA writable_schema = OFF",
        ],
    )
}

/// PostgreSQL: rows inserted while k_1 is marked not ready never reach the index.
fn broken_index_pg(env: &Env) -> Result<(), String> {
    broken_index(
        env,
        Target::Postgres,
        &[
            "UPDATE pg_index SET indisready = false WHERE indexrelid = 'k_1'::regclass",
            "INSERT INTO sbtest1 (k, c, pad) SELECT id, 'x', 'y' FROM generate_series(1, 50) AS id",
            "UPDATE pg_index SET indisready = true WHERE indexrelid = 'k_1'::regclass",
        ],
    )
}
