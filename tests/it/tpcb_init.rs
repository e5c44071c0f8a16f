//! pgbench's initialization options on `prepare tpcb`: `--foreign-keys` on PostgreSQL, MariaDB
//! (InnoDB) and Firebird (a history row of a branch that does not exist is refused; tpcb runs
//! and checks; `prepare` again drops the tables in their keys' order), `--unlogged-tables` on
//! PostgreSQL (the tables unlogged, and every result on them judged not durable, with the
//! reason), and each refused with its reason where the engine has no such thing.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, run_json, session, text, with_env};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for target in [
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ] {
        out.push(with_env(
            env,
            format!("tpcb_init::foreign_keys::{}", target.label()),
            move |env| foreign_keys(env, target),
        ));
    }
    out.push(with_env(
        env,
        "tpcb_init::unlogged_tables::postgres",
        unlogged,
    ));
    out.push(with_env(env, "tpcb_init::refused_where_missing", refused));
    out
}

fn prepare(dsn: &str, target: Target, extra: &str) -> std::process::Output {
    let mut args = vec!["prepare", "tpcb", "--dsn", dsn, extra];
    let flags = target.flags();
    args.extend(flags.iter().map(String::as_str));
    dbduel(&args)
}

fn foreign_keys(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "tpcb_fk");
    expect_code(
        &prepare(&dsn, target, "--foreign-keys"),
        0,
        "prepare --foreign-keys",
    )?;
    let orphan = session(&dsn)
        .batch("INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 999, 1, 0)");
    ensure(orphan.is_err(), || {
        "a history row of branch 999 was taken: no foreign key".to_string()
    })?;
    let r = run_json(
        env,
        &format!("tpcb-fk-{}", target.label()),
        &[
            "run",
            "tpcb",
            "--dsn",
            &dsn,
            "-c",
            "2",
            "-T",
            "1",
            "--max-tries",
            target.max_tries(),
        ],
        0,
    )?;
    ensure(
        r["transactions"].as_u64().unwrap_or(0) > 0 && r["errors"] == 0,
        || {
            format!(
                "tpcb on foreign keys: {} transactions, errors {}",
                r["transactions"], r["errors_by_kind"]
            )
        },
    )?;
    expect_code(&dbduel(&["check", "tpcb", "--dsn", &dsn]), 0, "check")?;
    // Again: the tables with keys between them are dropped and made anew.
    expect_code(&prepare(&dsn, target, "--foreign-keys"), 0, "prepare again")
}

fn unlogged(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpcb_unlogged");
    expect_code(
        &prepare(&dsn, Target::Postgres, "--unlogged-tables"),
        0,
        "prepare --unlogged-tables",
    )?;
    let rows = session(&dsn)
        .query_text(
            "SELECT count(*) FROM pg_class WHERE relpersistence = 'u' AND relname LIKE 'pgbench_%' AND relkind = 'r'",
        )
        .map_err(|e| e.message)?;
    ensure(rows.first().and_then(|r| r[0].as_i64()) == Some(4), || {
        format!("unlogged pgbench tables: {rows:?}")
    })?;
    let r = run_json(
        env,
        "tpcb-unlogged",
        &["run", "tpcb", "--dsn", &dsn, "-T", "1"],
        0,
    )?;
    let d = &r["engine"]["durability"];
    ensure(
        d["level"] == "unsafe" && d.to_string().contains("unlogged tables in the database"),
        || format!("durability on unlogged tables: {d}"),
    )
}

fn refused(env: &Env) -> Result<(), String> {
    let cases = [
        (Target::Sqlite, "--foreign-keys", "drop --foreign-keys"),
        (
            Target::Sqlite,
            "--unlogged-tables",
            "drop --unlogged-tables",
        ),
        (
            Target::MariaDb("InnoDB"),
            "--unlogged-tables",
            "drop --unlogged-tables",
        ),
        (
            Target::Firebird,
            "--unlogged-tables",
            "drop --unlogged-tables",
        ),
    ];
    for (target, flag, says) in cases {
        let dsn = env.fresh_db(target, "tpcb_refused");
        let out = prepare(&dsn, target, flag);
        expect_code(&out, 2, &format!("{flag} on {}", target.label()))?;
        ensure(text(&out).contains(says), || text(&out))?;
    }
    Ok(())
}
