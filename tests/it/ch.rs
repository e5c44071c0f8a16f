//! CH-benCHmark beyond the conformance suite (which runs it on every target and checks): the 22
//! queries' answers on one seeded dataset (`--data-seed`, one warehouse) are the known ones of
//! `ch-answers.txt` on SQLite, PostgreSQL, MariaDB and Firebird, each dialect's SQL answering as
//! the others do; a run reports the terminals' NOPM beside the streams' QphH, and each side alone;
//! bad options are refused. `DBDUEL_CH_ANSWERS_WRITE=1` makes the PostgreSQL trial write the file
//! anew (after a deliberate change of the queries or the data).

use std::fmt::Write as _;
use std::sync::Arc;

use dbduel::engine::{EngineOptions, Protocol, Value};
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, refusals, with_env};

/// The known answers: per query its rows, then per column the sum of its numbers or a digest
/// of its sorted texts.
const ANSWERS: &str = include_str!("ch-answers.txt");
const SEED: &str = "7";

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 3] = [
        (
            "more_streams_than_clients",
            &["run", "ch", "-c", "2", "--analytical-streams", "3"],
            "--analytical-streams 3 with --clients 2",
        ),
        (
            "procedures",
            &["run", "ch", "--procedures"],
            "--procedures does not apply to ch",
        ),
        (
            "bad_timeout",
            &["run", "ch", "--query-timeout", "0"],
            "--query-timeout 0",
        ),
    ];
    let mut out = refusals("ch", refused);
    for target in [
        Target::Sqlite,
        Target::Postgres,
        Target::MariaDb("InnoDB"),
        Target::Firebird,
    ] {
        let name = format!("ch::known_answers::{}", target.label());
        out.push(with_env(env, name, move |env| known_answers(env, target)));
    }
    out.push(with_env(env, "ch::both_sides_and_each_alone", both_sides));
    out
}

/// A value as every engine gives it: text trimmed of CHAR's padding, a timestamp to the second.
fn text_of(v: &Value) -> String {
    let t = v.to_string();
    let t = t.trim_end();
    let b = t.as_bytes();
    let stamp = b.len() >= 19 && b[4] == b'-' && b[7] == b'-' && b[13] == b':' && b[16] == b':';
    if stamp {
        t[..19].replace('T', " ")
    } else {
        t.to_string()
    }
}

/// FNV-1a over the texts, in order.
fn digest(texts: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for t in texts {
        for byte in t.bytes().chain([b'\n']) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// One query's answer as `ch-answers.txt` holds it: `Q5 5 rows: sum 123.45 | texts 0f1e...`.
fn summary(q: u8, rows: &[Vec<Value>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let mut line = format!("Q{q} {} rows:", rows.len());
    for c in 0..columns {
        let texts: Vec<String> = rows.iter().map(|r| text_of(&r[c])).collect();
        let numbers: Option<Vec<f64>> = texts.iter().map(|t| t.parse::<f64>().ok()).collect();
        let column = match numbers {
            Some(n) => format!(" sum {:.4}", n.iter().sum::<f64>()),
            None => {
                let mut sorted = texts;
                sorted.sort();
                format!(" texts {:016x}", digest(&sorted))
            }
        };
        if c > 0 {
            line.push_str(" |");
        }
        line.push_str(&column);
    }
    line
}

/// Whether `got` is the answer `want` says: the same rows and column kinds, the same texts, and
/// sums within a cent a row (Firebird's AVG keeps its argument's two decimals, MariaDB's four).
fn same(want: &str, got: &str) -> bool {
    let (Some((w_head, w_cols)), Some((g_head, g_cols))) =
        (want.split_once(':'), got.split_once(':'))
    else {
        return false;
    };
    let rows: f64 = w_head
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0);
    let (w_cols, g_cols): (Vec<&str>, Vec<&str>) =
        (w_cols.split('|').collect(), g_cols.split('|').collect());
    w_head == g_head
        && w_cols.len() == g_cols.len()
        && w_cols.iter().zip(&g_cols).all(|(w, g)| {
            match (w.trim().split_once(' '), g.trim().split_once(' ')) {
                (Some(("sum", w)), Some(("sum", g))) => {
                    let (w, g): (f64, f64) =
                        (w.parse().unwrap_or(f64::NAN), g.parse().unwrap_or(0.0));
                    (w - g).abs() <= 0.01 * rows.max(1.0) + 1e-9 * w.abs()
                }
                (w, g) => w == g,
            }
        })
}

/// Prepare the seeded dataset on `target`, then each query's answer must be the known one.
fn known_answers(env: &Env, target: Target) -> Result<(), String> {
    let dsn = env.fresh_db(target, "ch_answers");
    let flags = target.flags();
    let mut prepare = vec![
        "prepare",
        "ch",
        "--warehouses",
        "1",
        "--data-seed",
        SEED,
        "--dsn",
        &dsn,
    ];
    prepare.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&prepare), 0, "prepare ch")?;
    let parsed = dbduel::engine::parse_dsn(&dsn).map_err(|e| e.to_string())?;
    let engine = dbduel::engine::open(&parsed, &EngineOptions::default(), Protocol::Simple)
        .map_err(|e| e.to_string())?;
    let mut s = engine.connect().map_err(|e| e.message)?;
    let mut got = String::new();
    for q in 1..=22u8 {
        let rows = dbduel::workload::ch::answer(engine.as_ref(), s.as_mut(), q)
            .map_err(|e| format!("Q{q}: {}", e.message))?;
        let _ = writeln!(got, "{}", summary(q, &rows));
    }
    if matches!(target, Target::Postgres) && std::env::var_os("DBDUEL_CH_ANSWERS_WRITE").is_some() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/ch-answers.txt");
        std::fs::write(file, &got).map_err(|e| e.to_string())?;
    }
    let known: Vec<&str> = ANSWERS.lines().filter(|l| l.starts_with('Q')).collect();
    ensure(known.len() == 22, || {
        format!("ch-answers.txt holds {} queries", known.len())
    })?;
    let wrong: Vec<String> = known
        .iter()
        .zip(got.lines())
        .filter(|(w, g)| !same(w, g))
        .map(|(w, g)| format!("want {w}\n got {g}"))
        .collect();
    ensure(wrong.is_empty(), || wrong.join("\n"))?;
    let mut check = vec!["check", "ch", "--dsn", &dsn];
    check.extend(flags.iter().map(String::as_str));
    expect_code(&dbduel(&check), 0, "check ch")
}

/// One run with a stream beside two terminals reports NOPM and QphH, the queries as
/// transaction types; the terminals alone give no QphH, the stream alone no NOPM.
fn both_sides(env: &Env) -> Result<(), String> {
    let dsn = format!("sqlite://{}", env.path("ch-sides.db").display());
    expect_code(&dbduel(&["prepare", "ch", "--dsn", &dsn]), 0, "prepare")?;
    let mut figures = Vec::new();
    for (clients, streams) in [("3", "1"), ("2", "0"), ("1", "1")] {
        let json = env.path(&format!("ch-sides-{clients}-{streams}.json"));
        let json_s = json.display().to_string();
        let run = dbduel(&[
            "run",
            "ch",
            "--dsn",
            &dsn,
            "-c",
            clients,
            "--analytical-streams",
            streams,
            "-T",
            "2",
            "--json",
            &json_s,
        ]);
        expect_code(&run, 0, "run ch")?;
        let r = read_result(&json)?;
        let m = &r["workload"]["metrics"];
        let settings = &r["workload"]["settings"];
        ensure(settings["analytical_streams"] == streams, || {
            format!("settings: {settings}")
        })?;
        figures.push((m["nopm"].as_f64(), m["qphh"].as_f64()));
        let queries: u64 = r["transaction_types"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with('Q')))
            .map(|t| t["transactions"].as_u64().unwrap_or(0))
            .sum();
        ensure((queries > 0) == (streams != "0"), || {
            format!("{queries} queries with {streams} streams")
        })?;
    }
    ensure(
        matches!(figures[0], (Some(n), Some(q)) if n > 0.0 && q > 0.0),
        || format!("both sides: {:?}", figures[0]),
    )?;
    ensure(matches!(figures[1], (Some(n), None) if n > 0.0), || {
        format!("terminals alone: {:?}", figures[1])
    })?;
    ensure(matches!(figures[2], (None, Some(q)) if q > 0.0), || {
        format!("the stream alone: {:?}", figures[2])
    })?;
    expect_code(&dbduel(&["check", "ch", "--dsn", &dsn]), 0, "check ch")
}
