//! Declarative workload files: seed 002's example (20 clients x 10 queries, the first query's
//! time in the result) and a file using every generator, a foreign key and a writing query, on
//! every engine target in both protocols with `check` after each run; a foreign key broken by
//! hand fails `check`; bad files are refused at their line.

use std::sync::Arc;

use libtest_mimic::Trial;

use crate::env::{
    Env, TARGETS, Target, dbduel, ensure, expect_code, read_result, session, text, with_env,
};

/// Every generator kind, a foreign key into a sequence, an index, a weighted mix with a write.
const EVERY_GENERATOR: &str = r#"
name = "shop"

[[table]]
name = "customer"
rows = 200
primary_key = ["id"]
columns = [
  { name = "id", type = "int", gen = { kind = "sequence", start = 10 } },
  { name = "name", type = "varchar(30)", gen = { kind = "string", min = 3, max = 30 } },
  { name = "tier", type = "varchar(8)", gen = { kind = "choice", values = ["gold", "silver", "bronze"], weights = [1, 2, 7] } },
  { name = "score", type = "double", gen = { kind = "float", min = 0, max = 100 } },
  { name = "since", type = "timestamp", gen = { kind = "timestamp", from = "2020-01-01", to = "2024-12-31 23:59:59" } },
  { name = "note", type = "text", gen = { kind = "string", min = 0, max = 200 } },
]
indexes = [{ name = "customer_tier", columns = ["tier"] }]

[[table]]
name = "orders"
rows = 1000
primary_key = ["oid"]
columns = [
  { name = "oid", type = "bigint", gen = { kind = "sequence" } },
  { name = "cid", type = "int", gen = { kind = "foreign", table = "customer", column = "id" } },
  { name = "qty", type = "int", gen = { kind = "uniform", min = 1, max = 9 } },
  { name = "item", type = "int", gen = { kind = "zipfian", min = 1, max = 500, s = 1.1 } },
  { name = "code", type = "char(4)", gen = { kind = "choice", values = ["AB12", "CD34"] } },
]
indexes = [{ name = "orders_cid", columns = ["cid", "qty"] }]

[[query]]
name = "orders_of"
weight = 5
sql = "SELECT o.oid, o.qty, c.name FROM orders o JOIN customer c ON c.id = o.cid WHERE o.cid = :cid"
params = { cid = { kind = "foreign", table = "customer", column = "id" } }

[[query]]
name = "by_tier"
weight = 2
sql = "SELECT count(*) FROM customer WHERE tier = :tier AND score >= :low"
params = { tier = { kind = "choice", values = ["gold", "silver"] }, low = { kind = "float", min = 0, max = 50 } }

[[query]]
name = "bump"
weight = 1
sql = "UPDATE orders SET qty = qty + 1 WHERE oid = :oid"
params = { oid = { kind = "uniform", min = 1, max = 1000 } }
"#;

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let mut out = Vec::new();
    for &target in TARGETS {
        out.push(with_env(
            env,
            format!("custom::every_generator::{}", target.label()),
            move |env| every_generator(env, target),
        ));
        out.push(with_env(
            env,
            format!("custom::seed002_example::{}", target.label()),
            move |env| seed002(env, target),
        ));
    }
    out.push(with_env(
        env,
        "custom::broken_foreign_key_fails_check",
        broken_foreign_key,
    ));
    out.push(with_env(env, "custom::bad_files_name_the_line", bad_files));
    out
}

fn write_file(env: &Env, name: &str, text: &str) -> Result<String, String> {
    let path = env.path(name);
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}

fn with_flags<'a>(args: &[&'a str], flags: &'a [String]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(flags.iter().map(String::as_str));
    all
}

fn every_generator(env: &Env, target: Target) -> Result<(), String> {
    let file = write_file(
        env,
        &format!("shop-{}.toml", target.label()),
        EVERY_GENERATOR,
    )?;
    let dsn = env.fresh_db(target, "shop");
    let flags = target.flags();
    let prepare = with_flags(&["prepare", &file, "--dsn", &dsn, "--scale", "2"], &flags);
    expect_code(&dbduel(&prepare), 0, "prepare")?;
    let counts = session(&dsn)
        .query_text("SELECT (SELECT count(*) FROM customer), (SELECT count(*) FROM orders), (SELECT min(id) FROM customer), (SELECT count(DISTINCT tier) FROM customer) FROM dbduel_facts WHERE name LIKE 'custom.shop.%'")
        .map_err(|e| e.message)?;
    let row: Vec<i64> = counts[0].iter().map(|v| v.as_i64().unwrap_or(-1)).collect();
    ensure(row == vec![400, 2000, 10, 3], || format!("loaded {row:?}"))?;
    for protocol in ["simple", "prepared"] {
        let json = env.path(&format!("shop-{}-{protocol}.json", target.label()));
        let json_s = json.display().to_string();
        let run = with_flags(
            &[
                "run",
                &file,
                "--dsn",
                &dsn,
                "-c",
                "3",
                "-T",
                "2",
                "-M",
                protocol,
                "--max-tries",
                "100",
                "--json",
                &json_s,
            ],
            &flags,
        );
        expect_code(&dbduel(&run), 0, &format!("run -M {protocol}"))?;
        let r = read_result(&json)?;
        let types: Vec<String> = r["transaction_types"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        ensure(types == ["orders_of", "by_tier", "bump"], || {
            format!("types {types:?}")
        })?;
        let counts: Vec<u64> = r["transaction_types"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["transactions"].as_u64().unwrap_or(0))
                    .collect()
            })
            .unwrap_or_default();
        // Weights 5:2:1: the first query runs more often than the last.
        ensure(
            counts.iter().all(|&n| n > 0) && counts[0] > counts[2],
            || format!("mix {counts:?}"),
        )?;
        ensure(r["workload"]["name"] == "shop" && r["errors"] == 0, || {
            format!("{}", r["workload"])
        })?;
        let check = with_flags(&["check", &file, "--dsn", &dsn], &flags);
        expect_code(&dbduel(&check), 0, "check after the run")?;
    }
    let cleanup = with_flags(&["cleanup", &file, "--dsn", &dsn], &flags);
    expect_code(&dbduel(&cleanup), 0, "cleanup")?;
    let gone = session(&dsn).query_text("SELECT count(*) FROM customer");
    ensure(gone.is_err(), || "cleanup left the customer table".into())
}

fn seed002(env: &Env, target: Target) -> Result<(), String> {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/workloads/seed002-thetable.toml"
    );
    let dsn = env.fresh_db(target, "thetable");
    let flags = target.flags();
    expect_code(
        &dbduel(&with_flags(&["prepare", file, "--dsn", &dsn], &flags)),
        0,
        "prepare",
    )?;
    let json = env.path(&format!("seed002-{}.json", target.label()));
    let json_s = json.display().to_string();
    let run = with_flags(
        &[
            "run", file, "--dsn", &dsn, "-c", "20", "-t", "10", "--json", &json_s,
        ],
        &flags,
    );
    expect_code(&dbduel(&run), 0, "run 20 clients x 10 queries")?;
    let r = read_result(&json)?;
    ensure(r["transactions"] == 200 && r["errors"] == 0, || {
        format!("{} transactions, {} errors", r["transactions"], r["errors"])
    })?;
    ensure(
        r["first_transaction_ms"].as_f64().unwrap_or(0.0) > 0.0,
        || format!("first transaction: {}", r["first_transaction_ms"]),
    )?;
    expect_code(
        &dbduel(&with_flags(&["check", file, "--dsn", &dsn], &flags)),
        0,
        "check",
    )
}

fn broken_foreign_key(env: &Env) -> Result<(), String> {
    let file = write_file(env, "shop-broken.toml", EVERY_GENERATOR)?;
    let dsn = env.fresh_db(Target::Sqlite, "shop_broken");
    expect_code(&dbduel(&["prepare", &file, "--dsn", &dsn]), 0, "prepare")?;
    expect_code(&dbduel(&["check", &file, "--dsn", &dsn]), 0, "check before")?;
    session(&dsn)
        .batch("DELETE FROM customer WHERE id = (SELECT min(cid) FROM orders)")
        .map_err(|e| e.message)?;
    let out = dbduel(&["check", &file, "--dsn", &dsn]);
    expect_code(&out, 1, "check after deleting a referenced customer")?;
    ensure(
        text(&out).contains("FAILED orders.cid -> customer.id"),
        || text(&out),
    )
}

fn bad_files(env: &Env) -> Result<(), String> {
    let cases = [
        (
            "kind = \"zipfian\"",
            "kind = \"zipf\"",
            ":26: column orders.item: unknown generator kind 'zipf'",
        ),
        (
            "WHERE o.cid = :cid",
            "WHERE o.cid = :cust",
            ":34: query orders_of: the sql uses :cust",
        ),
        (
            "table = \"customer\", column = \"id\" } },\n  { name = \"qty\"",
            "table = \"nobody\", column = \"id\" } },\n  { name = \"qty\"",
            ":24: column orders.cid: foreign table nobody",
        ),
        (
            "rows = 1000",
            "rows = 1000\nrowz = 5",
            "unknown field `rowz`",
        ),
        (
            "type = \"double\"",
            "type = \"decimal\"",
            ":12: column customer.score: unknown type 'decimal'",
        ),
    ];
    for (i, (from, to, needle)) in cases.iter().enumerate() {
        ensure(EVERY_GENERATOR.contains(from), || {
            format!("case {i}: {from} not in the file")
        })?;
        let name = format!("bad-{i}.toml");
        let file = write_file(env, &name, &EVERY_GENERATOR.replacen(from, to, 1))?;
        let dsn = format!("sqlite://{}", env.path(&format!("bad-{i}.db")).display());
        let out = dbduel(&["run", &file, "--dsn", &dsn]);
        expect_code(&out, 2, &format!("bad file {i}"))?;
        let all = text(&out);
        ensure(all.contains(&name) && all.contains(needle), || {
            format!("case {i}: expected '{needle}' in:\n{all}")
        })?;
        ensure(!env.path(&format!("bad-{i}.db")).exists(), || {
            format!("case {i}: a database was created before the file was checked")
        })?;
    }
    Ok(())
}
