//! pgbench's initialization options on `prepare tpcb`: `--foreign-keys` on PostgreSQL, MariaDB
//! (InnoDB) and Firebird (a history row of a branch that does not exist is refused; tpcb runs
//! and checks; `prepare` again drops the tables in their keys' order), `--unlogged-tables` on
//! PostgreSQL (the tables unlogged, and every result on them judged not durable, with the
//! reason), `--partitions` with `--partition-method` on PostgreSQL (pgbench's bounds, open at
//! both ends, or a hash's moduli) and MariaDB (its own partitions), tpcb running and checking on
//! them; `-I` with `G` (the rows made by the server) on every engine, checked and run; `-I`'s
//! steps run in the order given; `--tablespace` and `--index-tablespace` on PostgreSQL (the
//! tables and the keys' indexes where asked); and each refused with its reason where the engine
//! has no such thing.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, Target, dbduel, ensure, expect_code, per_target, run_json, session, text, with_env,
};

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let servers = [
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ];
    let mut out = per_target(env, "tpcb_init::foreign_keys", &servers, foreign_keys);
    out.push(with_env(
        env,
        "tpcb_init::unlogged_tables::postgres",
        unlogged,
    ));
    out.push(with_env(
        env,
        "tpcb_init::partitions::postgres",
        partitions_postgres,
    ));
    out.push(with_env(
        env,
        "tpcb_init::partitions::mariadb-innodb",
        partitions_mariadb,
    ));
    out.extend(per_target(
        env,
        "tpcb_init::rows_made_by_the_server",
        &[Target::Sqlite, servers[0], servers[1], servers[2]],
        server_side,
    ));
    out.push(with_env(env, "tpcb_init::refused_where_missing", refused));
    out.push(with_env(
        env,
        "tpcb_init::steps_in_the_order_given::postgres",
        steps_in_order,
    ));
    out.push(with_env(
        env,
        "tpcb_init::tablespaces::postgres",
        tablespaces,
    ));
    out
}

/// `--tablespace` and `--index-tablespace` on PostgreSQL, two tablespaces made for the test:
/// the four tables in the first, the three primary keys' indexes in the second; tpcb runs and
/// checks there; both are dropped afterwards (they belong to the whole test server).
fn tablespaces(env: &Env) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let target = Target::Postgres;
    let dsn = env.fresh_db(target, "tpcb_tablespaces");
    let mut s = session(&dsn);
    let data = s
        .query_text("SELECT current_setting('data_directory')")
        .map_err(|e| e.to_string())?[0][0]
        .to_string();
    let owner = std::fs::metadata(&data).map_err(|e| e.to_string())?;
    let id = std::process::id();
    let mut made = Vec::new();
    for kind in ["tables", "indexes"] {
        // Under /tmp: the server's user cannot reach into the test's private directory.
        let dir = std::env::temp_dir().join(format!("dbduel-ts-{kind}-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        std::os::unix::fs::chown(&dir, Some(owner.uid()), Some(owner.gid()))
            .map_err(|e| e.to_string())?;
        let name = format!("dbduel_{kind}_{id}");
        s.batch(&format!(
            "CREATE TABLESPACE {name} LOCATION '{}'",
            dir.display()
        ))
        .map_err(|e| e.to_string())?;
        made.push((name, dir));
    }
    let (tables, indexes) = (made[0].0.clone(), made[1].0.clone());
    let out = dbduel(&[
        "prepare",
        "tpcb",
        "--dsn",
        &dsn,
        "--tablespace",
        &tables,
        "--index-tablespace",
        &indexes,
    ]);
    let checked = expect_code(&out, 0, "--tablespace --index-tablespace").and_then(|()| {
        let placed = |space: &str| {
            session(&dsn)
                .query_text(&format!(
                    "SELECT c.relname FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace \
                     WHERE t.spcname = '{space}' ORDER BY 1"
                ))
                .map(|rows| rows.iter().map(|r| r[0].to_string()).collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        let (t, i) = (placed(&tables)?, placed(&indexes)?);
        ensure(
            t == ["pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers"]
                && i == ["pgbench_accounts_pkey", "pgbench_branches_pkey", "pgbench_tellers_pkey"],
            || format!("in {tables}: {t:?}; in {indexes}: {i:?}"),
        )?;
        runs_and_checks(env, &dsn, target, "tpcb-tablespaces")
    });
    let _ = dbduel(&["cleanup", "tpcb", "--dsn", &dsn]);
    for (name, dir) in &made {
        let _ = s.batch(&format!("DROP TABLESPACE {name}"));
        let _ = std::fs::remove_dir_all(dir);
    }
    checked
}

/// `-I` runs its steps in the order given, as pgbench: the primary keys before the rows
/// (spaces ignored) make data tpcb runs and checks on; `tdg` drops the tables it just created
/// before making the rows, and fails there.
fn steps_in_order(env: &Env) -> Result<(), String> {
    let target = Target::Postgres;
    let dsn = env.fresh_db(target, "tpcb_steps");
    let out = dbduel(&["prepare", "tpcb", "--dsn", &dsn, "-I", "dt p g v"]);
    expect_code(&out, 0, "-I 'dt p g v'")?;
    let keys = session(&dsn)
        .query_text("SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND conrelid::regclass::text LIKE 'pgbench_%'")
        .map_err(|e| e.to_string())?;
    ensure(keys[0][0].as_i64() == Some(3), || {
        format!("three primary keys: {keys:?}")
    })?;
    runs_and_checks(env, &dsn, target, "tpcb-steps-order")?;
    let dsn = env.fresh_db(target, "tpcb_steps_tdg");
    let out = dbduel(&["prepare", "tpcb", "--dsn", &dsn, "-I", "tdg"]);
    expect_code(&out, 2, "-I tdg")?;
    ensure(text(&out).contains("pgbench_"), || text(&out))
}

fn prepare(dsn: &str, target: Target, extra: &str) -> std::process::Output {
    let mut args = vec!["prepare", "tpcb", "--dsn", dsn];
    args.extend(extra.split(' '));
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
    runs_and_checks(env, &dsn, target, &format!("tpcb-fk-{}", target.label()))?;
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
        (Target::Sqlite, "--partitions 2", "drop --partitions"),
        (Target::Firebird, "--partitions 2", "drop --partitions"),
        (
            Target::Postgres,
            "--partition-method hash",
            "--partition-method needs --partitions",
        ),
        (
            Target::Postgres,
            "--partitions 100001",
            "give at most 100000",
        ),
        (Target::Sqlite, "-I dtxq", "'x' is not a step"),
        (Target::Sqlite, "-I dtgGv", "g or G, not both"),
        (
            Target::Sqlite,
            "--tablespace ts",
            "SQLite has no tablespaces",
        ),
        (
            Target::MariaDb("InnoDB"),
            "--index-tablespace ts",
            "MariaDB has no tablespace",
        ),
        (
            Target::Firebird,
            "--tablespace ts",
            "Firebird 3 has no tablespaces",
        ),
        (Target::Sqlite, "-I dtgvpf", "drop --foreign-keys"),
    ];
    for (target, flag, says) in cases {
        let dsn = env.fresh_db(target, "tpcb_refused");
        let out = prepare(&dsn, target, flag);
        expect_code(&out, 2, &format!("{flag} on {}", target.label()))?;
        ensure(text(&out).contains(says), || text(&out))?;
    }
    Ok(())
}

/// tpcb runs and checks on the partitioned tables, with two clients.
fn runs_and_checks(env: &Env, dsn: &str, target: Target, name: &str) -> Result<(), String> {
    let r = run_json(
        env,
        name,
        &[
            "run",
            "tpcb",
            "--dsn",
            dsn,
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
                "{name}: {} transactions, errors {}",
                r["transactions"], r["errors_by_kind"]
            )
        },
    )?;
    let mut check = vec!["check", "tpcb", "--dsn", dsn];
    let flags = target.flags();
    check.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&check), 0, "check")
}

/// Scale 1 in three range partitions: pgbench's bounds (33,334 aids each, open at both ends),
/// every account in one; then two hash partitions by modulus 2.
fn partitions_postgres(env: &Env) -> Result<(), String> {
    let dsn = env.fresh_db(Target::Postgres, "tpcb_parts");
    expect_code(
        &prepare(&dsn, Target::Postgres, "--partitions 3"),
        0,
        "prepare --partitions 3",
    )?;
    let bounds = |dsn: &str| -> Result<Vec<String>, String> {
        let rows = session(dsn)
            .query_text(
                "SELECT c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pgbench_accounts'::regclass ORDER BY c.relname",
            )
            .map_err(|e| e.message)?;
        Ok(rows.iter().map(|r| r[0].to_string()).collect())
    };
    let got = bounds(&dsn)?;
    let want = [
        "pgbench_accounts_1 FOR VALUES FROM (MINVALUE) TO (33335)",
        "pgbench_accounts_2 FOR VALUES FROM (33335) TO (66669)",
        "pgbench_accounts_3 FOR VALUES FROM (66669) TO (MAXVALUE)",
    ];
    ensure(got == want, || format!("range partitions {got:?}"))?;
    let rows = session(&dsn)
        .query_text("SELECT count(*) FROM ONLY pgbench_accounts_2")
        .map_err(|e| e.message)?;
    ensure(
        rows.first().and_then(|r| r[0].as_i64()) == Some(33334),
        || format!("pgbench_accounts_2 holds {rows:?}"),
    )?;
    runs_and_checks(env, &dsn, Target::Postgres, "tpcb-parts-range")?;
    expect_code(
        &prepare(
            &dsn,
            Target::Postgres,
            "--partitions 2 --partition-method hash",
        ),
        0,
        "prepare --partitions 2 --partition-method hash",
    )?;
    let got = bounds(&dsn)?;
    let want = [
        "pgbench_accounts_1 FOR VALUES WITH (modulus 2, remainder 0)",
        "pgbench_accounts_2 FOR VALUES WITH (modulus 2, remainder 1)",
    ];
    ensure(got == want, || format!("hash partitions {got:?}"))?;
    runs_and_checks(env, &dsn, Target::Postgres, "tpcb-parts-hash")
}

/// MariaDB's own partitions: three by range (the last to MAXVALUE), then two by hash.
fn partitions_mariadb(env: &Env) -> Result<(), String> {
    let target = Target::MariaDb("InnoDB");
    let dsn = env.fresh_db(target, "tpcb_parts");
    let parts = |dsn: &str| -> Result<Vec<String>, String> {
        let rows = session(dsn)
            .query_text(
                "SELECT CONCAT(PARTITION_NAME, ' ', PARTITION_METHOD, ' ', COALESCE(PARTITION_DESCRIPTION, '')) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgbench_accounts' ORDER BY PARTITION_ORDINAL_POSITION",
            )
            .map_err(|e| e.message)?;
        Ok(rows.iter().map(|r| r[0].to_string()).collect())
    };
    expect_code(
        &prepare(&dsn, target, "--partitions 3"),
        0,
        "prepare --partitions 3",
    )?;
    let got = parts(&dsn)?;
    ensure(
        got == ["p1 RANGE 33335", "p2 RANGE 66669", "p3 RANGE MAXVALUE"],
        || format!("range partitions {got:?}"),
    )?;
    runs_and_checks(env, &dsn, target, "tpcb-parts-mariadb")?;
    expect_code(
        &prepare(&dsn, target, "--partitions 2 --partition-method hash"),
        0,
        "prepare hash",
    )?;
    let got = parts(&dsn)?;
    ensure(
        got.len() == 2 && got.iter().all(|p| p.contains("HASH")),
        || format!("hash partitions {got:?}"),
    )
}

/// `-I dtGvp` at scale 2: the server makes the rows (2 branches, 20 tellers, 200,000 accounts),
/// `check` finds them whole, and tpcb runs on them.
fn server_side(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "tpcb_server_side");
    expect_code(
        &prepare(&dsn, target, "-I dtGvp -s 2"),
        0,
        "prepare -I dtGvp",
    )?;
    let rows = session(&dsn)
        .query_text(
            "SELECT (SELECT count(*) FROM pgbench_branches), (SELECT count(*) FROM pgbench_tellers), (SELECT count(*) FROM pgbench_accounts), (SELECT max(bid) FROM pgbench_accounts) FROM pgbench_branches WHERE bid = 1",
        )
        .map_err(|e| e.message)?;
    let got: Vec<i64> = rows
        .first()
        .map(|r| r.iter().filter_map(|v| v.as_i64()).collect())
        .unwrap_or_default();
    ensure(got == [2, 20, 200_000, 2], || {
        format!("rows made by the server: {got:?}")
    })?;
    runs_and_checks(
        env,
        &dsn,
        target,
        &format!("tpcb-server-side-{}", target.label()),
    )
}
