//! CH-benCHmark beyond the conformance suite (which runs it on every target and checks): the 22
//! queries' answers on one seeded dataset (`--data-seed`, one warehouse, then `SPREAD`'s changes,
//! so that no answer is empty or all alike) are the known ones of `ch-answers.txt` on SQLite,
//! PostgreSQL, MariaDB and Firebird, each dialect's SQL answering as the others do; a run reports the terminals' NOPM beside the streams' QphH, and each side alone;
//! one sweep runs the mix and each side alone in rounds, and its report judges what each side
//! cost the other; bad options are refused. `DBDUEL_CH_ANSWERS_WRITE=1` makes the PostgreSQL trial write the file
//! anew (after a deliberate change of the queries or the data).

use std::fmt::Write as _;
use std::sync::Arc;

use dbduel::engine::{EngineOptions, Protocol, Value};
use libtest_mimic::Trial;

use crate::env::{Env, Target, dbduel, ensure, expect_code, read_result, refusals, text, with_env};

/// The known answers: per query its rows, then per column the sum of its numbers or a digest
/// of its sorted texts.
const ANSWERS: &str = include_str!("ch-answers.txt");
const SEED: &str = "7";
/// The file's first line, which says what it holds.
const ANSWERS_HEAD: &str = "# tests/it/ch-answers.txt: CH-benCHmark's 22 answers on one warehouse loaded with --data-seed 7 and spread by tests/it/ch.rs's SPREAD: rows, then per column the sum of its numbers or a digest of its sorted texts (written by DBDUEL_CH_ANSWERS_WRITE=1 on PostgreSQL)";

/// What a freshly loaded TPC-C database lacks for the queries to have answers that tell: every
/// ORDER-LINE quantity is 5 and a delivered line's amount 0, every S_ORDER_CNT 0, every order
/// of one date, every balance -10.00, every customer with an order. The same statements in SQL
/// every engine takes spread them.
const SPREAD: [&str; 5] = [
    "UPDATE order_line SET ol_quantity = ol_number, ol_amount = ol_number * 1.25 WHERE ol_o_id <= 1500",
    "UPDATE orders SET o_entry_d = '2024-06-01 00:00:00' WHERE o_id <= 700",
    "UPDATE stock SET s_order_cnt = s_quantity * s_quantity WHERE s_i_id <= 20000",
    "UPDATE customer SET c_balance = c_id * 0.25 WHERE c_d_id <= 5",
    "DELETE FROM orders WHERE o_d_id = 1 AND o_id <= 100",
];

pub fn trials(env: &Arc<Env>) -> Vec<Trial> {
    let refused: [(&str, &[&str], &str); 6] = [
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
            "a_side_alone_with_a_rate",
            &["run", "ch", "-c", "3", "--alone", "terminals", "-R", "100"],
            "terminals-alone runs 2 of the 3 clients asked, and a rate or phases spread over them",
        ),
        (
            "a_side_alone_capacity",
            &[
                "capacity",
                "ch",
                "--dsn",
                "sqlite:///nonexistent/ch.db",
                "-c",
                "3",
                "--alone",
                "terminals",
                "--slo",
                "p99<100ms",
            ],
            "capacity: terminals-alone runs 2 of the 3 clients asked",
        ),
        (
            "a_side_alone_with_no_client",
            &["run", "ch", "-c", "1", "--alone", "terminals"],
            "terminals-alone: --clients 1 with --analytical-streams 1 leaves no terminal to run alone",
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
    out.push(with_env(env, "ch::sides_in_one_sweep", sides_in_one_sweep));
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
        // Whole numbers (no decimal point in any engine's text) are summed exactly.
        let whole = texts.iter().all(|t| !t.contains(['.', 'e', 'E']));
        let column = match numbers {
            Some(_) if whole => {
                let sum: i128 = texts.iter().filter_map(|t| t.parse::<i128>().ok()).sum();
                format!(" whole {sum}")
            }
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

/// Whether `got` is the answer `want` says: the same rows, the same texts, whole numbers summing
/// to the same, and other numbers' sums within a cent a row (MariaDB's averages keep four
/// decimals; SQLite may give a decimal column's whole values as integers).
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
                (Some(("whole", w)), Some(("whole", g))) => w == g,
                (Some(("sum" | "whole", w)), Some(("sum" | "whole", g))) => {
                    let (w, g): (f64, f64) =
                        (w.parse().unwrap_or(f64::NAN), g.parse().unwrap_or(0.0));
                    (w - g).abs() <= 0.01 * rows.max(1.0) + 1e-9 * w.abs()
                }
                (w, g) => w == g,
            }
        })
}

/// Prepare the seeded dataset on `target`, spread it, then each query's answer must be the known
/// one, and every answer has rows (an empty one would prove nothing of its query).
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
    let mut admin = crate::env::session(&dsn);
    for statement in SPREAD {
        admin
            .batch(statement)
            .map_err(|e| format!("{statement}: {}", e.message))?;
    }
    drop(admin);
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
        std::fs::write(file, format!("{ANSWERS_HEAD}\n{got}")).map_err(|e| e.to_string())?;
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
    let empty: Vec<&str> = got.lines().filter(|l| l.contains(" 0 rows")).collect();
    ensure(empty.is_empty(), || {
        format!("answers without rows: {empty:?}")
    })?;
    // The changes broke TPC-C's consistency on purpose: no `check` here (conformance checks).
    ensure(wrong.is_empty(), || wrong.join("\n"))
}

/// One run with a stream beside two terminals reports NOPM and QphH, the queries as
/// transaction types; the terminals alone give no QphH, the stream alone no NOPM (and says that
/// no terminal runs).
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
        let alone = clients == streams;
        ensure(
            text(&run).contains("no TPC-C terminal runs") == alone,
            || {
                format!(
                    "the warning of a run of streams alone, {clients} clients and {streams} streams:\n{}",
                    text(&run)
                )
            },
        )?;
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

/// The shipped plan `plans/ch-sides.toml` on SQLite alone, its rounds one second long, at 3
/// clients (2 terminals and the stream) on one warehouse.
fn sides_plan() -> Result<String, String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/ch-sides.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut plan: toml::Table = toml::from_str(&text).map_err(|e| e.to_string())?;
    let set = [
        ("engines", toml::Value::Array(vec!["sqlite".into()])),
        ("clients", toml::Value::Array(vec![3.into()])),
        ("time", 1.into()),
        ("warmup", 0.into()),
        ("scale", 1.into()),
    ];
    for (key, value) in set {
        plan.insert(key.into(), value);
    }
    toml::to_string(&plan).map_err(|e| e.to_string())
}

/// One sweep measures the mix and each of its sides alone, round by round, each side alone
/// with the mix's own clients of that side (2 terminals, 1 stream); the report sets each side's
/// figure in the mix beside itself alone: the means of the stored runs, and a verdict that
/// follows its interval.
fn sides_in_one_sweep(env: &Env) -> Result<(), String> {
    let plan = env.path("ch-sides.toml");
    std::fs::write(&plan, sides_plan()?).map_err(|e| e.to_string())?;
    let store = env.path("ch-sides-results.db");
    let (plan_s, store_s) = (plan.display().to_string(), store.display().to_string());
    let sweep = dbduel(&["sweep", &plan_s, "--results", &store_s]);
    expect_code(&sweep, 0, "sweep")?;
    let runs: Vec<String> = text(&sweep)
        .lines()
        .filter(|l| l.trim_start().starts_with("run "))
        .map(str::to_string)
        .collect();
    let round = [
        "ch c=3 r=",
        "terminals-alone c=3 (2 ran) r=",
        "streams-alone c=3 (1 ran) r=",
    ];
    ensure(runs.len() == 9, || format!("9 runs: {runs:#?}"))?;
    // Round r starts one further along: each variant first, second and last once.
    for (i, line) in runs.iter().enumerate() {
        let (r, k) = (i / 3, i % 3);
        let want = format!("{}{}", round[(r + k) % 3], r + 1);
        ensure(line.contains(&want), || {
            format!("run {} is not `{want}`: {runs:#?}", i + 1)
        })?;
    }
    let export = dbduel(&[
        "results",
        "export",
        "--results",
        &store_s,
        "--format",
        "json",
    ]);
    expect_code(&export, 0, "results export")?;
    let stored: Vec<serde_json::Value> =
        serde_json::from_slice(&export.stdout).map_err(|e| format!("export: {e}"))?;
    // Each side alone has its own figure only.
    for r in &stored {
        let m = &r["metrics"];
        let (nopm, qphh) = (m.get("nopm").is_some(), m.get("qphh").is_some());
        let want = match r["variant"].as_str() {
            Some("terminals-alone") => (true, false),
            Some("streams-alone") => (false, true),
            _ => (true, true),
        };
        ensure((nopm, qphh) == want, || {
            format!("{}'s figures: {m}", r["variant"])
        })?;
    }
    // And its own clients' work only: the terminals alone run no query, the stream alone no
    // TPC-C transaction.
    for r in &stored {
        let id = r["id"].to_string();
        let show = dbduel(&["results", "show", &id, "--results", &store_s]);
        expect_code(&show, 0, "results show")?;
        let full: serde_json::Value =
            serde_json::from_slice(&show.stdout).map_err(|e| format!("results show: {e}"))?;
        let ran = |query: bool| {
            full["transaction_types"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with('Q')) == query)
                .any(|t| t["transactions"].as_u64().unwrap_or(0) > 0)
        };
        let want = match r["variant"].as_str() {
            Some("terminals-alone") => (true, false),
            Some("streams-alone") => (false, true),
            _ => (true, true),
        };
        ensure((ran(false), ran(true)) == want, || {
            format!(
                "{} ran (transactions, queries) {:?}",
                r["variant"],
                (ran(false), ran(true))
            )
        })?;
    }
    let repeats = |variant: &str, figure: &str| -> Result<Vec<f64>, String> {
        let v: Vec<f64> = stored
            .iter()
            .filter(|r| r["variant"] == variant)
            .filter_map(|r| r["metrics"][figure].as_f64())
            .collect();
        ensure(v.len() == 3, || format!("{variant}'s {figure}: {v:?}"))?;
        Ok(v)
    };
    let mean = |variant: &str, figure: &str| -> Result<f64, String> {
        Ok(repeats(variant, figure)?.iter().sum::<f64>() / 3.0)
    };
    let report = dbduel(&["report", "--results", &store_s, "--format", "markdown"]);
    expect_code(&report, 0, "report")?;
    let md = String::from_utf8_lossy(&report.stdout).to_string();
    ensure(
        md.contains("| ch | terminals-alone | 3 (2 ran) |")
            && md.contains("| ch | streams-alone | 3 (1 ran) |"),
        || format!("the points' clients:\n{md}"),
    )?;
    for (what, alone, figure) in [
        ("terminals' NOPM", "terminals-alone", "nopm"),
        ("streams' QphH", "streams-alone", "qphh"),
    ] {
        let prefix = format!("| sqlite | tuned | 3 | {what} | ");
        let line = md
            .lines()
            .find(|l| l.starts_with(&prefix))
            .ok_or_else(|| format!("no line for the {what}:\n{md}"))?;
        let cells: Vec<&str> = line.split(" | ").collect();
        let (a, m) = (mean(alone, figure)?, mean("ch", figure)?);
        ensure(
            cells[4] == format!("{a:.1}") && cells[5] == format!("{m:.1}"),
            || format!("{what}: alone {a:.1}, in the mix {m:.1}, the report: {line}"),
        )?;
        // "-22.3% \\[-36.0..-7.6\\]": the interval's ends, then the verdict they give.
        let change = cells[6].replace('\\', "");
        let verdict = cells[7].trim_end_matches(" |");
        let interval = change
            .split_once('[')
            .and_then(|(_, r)| r.trim_end_matches(']').split_once(".."))
            .and_then(|(lo, hi)| Some((lo.parse::<f64>().ok()?, hi.parse::<f64>().ok()?)));
        let Some((lo, hi)) = interval else {
            // No interval only where a side made none in every repeat (a second is short).
            let want = match (a == 0.0, m == 0.0) {
                (true, false) => "faster in the mix",
                (false, true) => "slower in the mix",
                _ => return Err(format!("{what}: no interval in {line}")),
            };
            ensure(verdict == want, || format!("{what}: {line}"))?;
            continue;
        };
        // Repeats that do not overlap are never "no difference": 3 a side are too few.
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            (lo, v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        };
        let (alone_range, mix_range) = (
            range(&repeats(alone, figure)?),
            range(&repeats("ch", figure)?),
        );
        let apart = mix_range.1 < alone_range.0 || mix_range.0 > alone_range.1;
        let want = if hi < 0.0 {
            "slower in the mix"
        } else if lo > 0.0 {
            "faster in the mix"
        } else if apart {
            "noise unknown"
        } else {
            "no difference beyond the noise"
        };
        let said = verdict.split(" (").next().unwrap_or(verdict);
        ensure(said == want, || {
            format!("{what}: [{lo}..{hi}] gives `{want}`, the report says `{verdict}`")
        })?;
    }
    Ok(())
}
