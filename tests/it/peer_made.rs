//! Databases that pgbench and sysbench made themselves, with none of dbduel's records: dbduel
//! reads their scale and tables from the data, runs on them, and checks them.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, Test, dbduel, ensure, expect_code, run_json, session, text, trials_of,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let tests: [(&str, Test); 2] = [
        ("runs_on_a_pgbench_initialised_database", pgbench_made),
        (
            "sysbench_tables_found_without_dbduel_factsdata",
            sysbench_made,
        ),
    ];
    trials_of(env, "peer_made", tests)
}

fn pgbench_made(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "pgbench");
    let pgbench = ["/usr/bin/pgbench", "/usr/local/bin/pgbench"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let pgbench = pgbench.ok_or("pgbench not found: install the postgresql package")?;
    let out = std::process::Command::new(pgbench)
        .args(["-i", "-s", "2", "-q", &dsn])
        .output()
        .map_err(|e| e.to_string())?;
    expect_code(&out, 0, "pgbench -i")?;
    let r = run_json(
        env,
        "pgbench_made",
        &["run", "tpcb", "--dsn", &dsn, "-c", "2", "-T", "1"],
        0,
    )?;
    ensure(r["workload"]["scale"] == 2, || {
        format!("scale read as {}", r["workload"]["scale"])
    })?;
    expect_code(&dbduel(&["check", "tpcb", "--dsn", &dsn]), 0, "check")
}

/// Tables made by sysbench itself carry no dbduel metadata: dbduel counts them.
fn sysbench_made(env: &Env) -> Result<(), String> {
    let dsn = format!("sqlite://{}", env.path("sysbench-made.db").display());
    let out = dbduel(&[
        "prepare",
        "oltp_read_only",
        "--dsn",
        &dsn,
        "--tables",
        "3",
        "--table-size",
        "500",
    ]);
    expect_code(&out, 0, "prepare")?;
    session(&dsn)
        .batch("DROP TABLE dbduel_facts")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", "oltp_read_only", "--dsn", &dsn]);
    expect_code(&out, 0, "check")?;
    let all = text(&out);
    ensure(
        all.contains("sbtest3 shape") && all.contains("500 rows of 500"),
        || all.clone(),
    )
}
