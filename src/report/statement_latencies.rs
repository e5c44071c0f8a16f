//! Per-statement latencies as the summary prints them: a script's commands in pgbench's own
//! layout (pgbench 17's -r: "statement latencies in milliseconds and failures:", then per command
//! its mean latency, its failures, its retries when transactions are tried again, and the command
//! as written), every other transaction type as a compact table (calls per transaction, mean and
//! percentiles, total time and share of the transactions' time, failures); a point's statements
//! over its stored repeats (`over_repeats`), which the HTML and markdown reports draw as "where
//! the time went".

use std::fmt::Write;

use serde::Serialize;

use crate::metrics::statement_latencies::Statement;
use crate::result::RunResult;

/// How much of a statement's text a table shows.
const SHOWN_CHARS: usize = 72;

/// The text cut to `SHOWN_CHARS`, an ellipsis where it was cut.
pub fn shortened(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_string();
    }
    text.chars().take(SHOWN_CHARS - 1).collect::<String>() + "…"
}

/// The statements of each transaction type that has some, in the types' order.
pub fn by_type(statements: &[Statement]) -> Vec<(&str, Vec<&Statement>)> {
    let mut out: Vec<(&str, Vec<&Statement>)> = Vec::new();
    for s in statements {
        match out.iter_mut().find(|(t, _)| *t == s.transaction) {
            Some((_, list)) => list.push(s),
            None => out.push((&s.transaction, vec![s])),
        }
    }
    out
}

/// The summary's per-statement part (nothing when timing was off).
pub fn summary(out: &mut String, r: &RunResult) {
    let groups = by_type(&r.measurement.statement_latencies);
    let scripts = groups
        .iter()
        .filter(|(_, l)| l.iter().all(|s| s.as_written))
        .count();
    let mut script_no = 0;
    for (name, lines) in &groups {
        if lines.iter().all(|s| s.as_written) {
            script_no += 1;
            let figures = script_figures(r, name);
            let max_tries = r.options.max_tries;
            pgbench_layout(out, name, lines, max_tries, scripts, script_no, &figures);
        } else {
            compact(out, name, lines);
        }
    }
}

/// A script's commands as pgbench 17 prints them with -r (its header under "SQL script N:"
/// when a run has several scripts).
/// `figures`: pgbench's lines of the script's own figures, under its header.
fn pgbench_layout(
    out: &mut String,
    name: &str,
    lines: &[&Statement],
    max_tries: u32,
    scripts: usize,
    number: usize,
    figures: &str,
) {
    let what = if max_tries == 1 {
        " and failures"
    } else {
        ", failures and retries"
    };
    let _ = writeln!(out);
    let prefix = if scripts > 1 {
        let _ = writeln!(
            out,
            "SQL script {number}: {}",
            super::pgbench::script_title(name)
        );
        out.push_str(figures);
        " - "
    } else {
        ""
    };
    let _ = writeln!(out, "{prefix}statement latencies in milliseconds{what}:");
    for s in lines {
        if max_tries == 1 {
            let _ = writeln!(out, "   {:11.3}  {:10} {}", s.mean_ms, s.failures, s.text);
        } else {
            let _ = writeln!(
                out,
                "   {:11.3}  {:10} {:10} {}",
                s.mean_ms, s.failures, s.retries, s.text
            );
        }
    }
}

/// pgbench's lines for one of several scripts: its weight, transactions, failures, retries
/// (with --max-tries), skipped (-L in an open loop) and latency, each share over the script's
/// transactions done, failed and skipped, as pgbench 17 counts them.
fn script_figures(r: &RunResult, name: &str) -> String {
    let mut out = String::new();
    let m = &r.measurement;
    let Some(t) = m.transaction_types.iter().find(|t| t.name == name) else {
        return out;
    };
    // The weights, from the workload's variant (`name@weight ...`).
    let weights: Vec<(&str, u64)> = r
        .workload
        .variant
        .split(' ')
        .filter_map(|w| w.rsplit_once('@'))
        .filter_map(|(n, w)| Some((n, w.parse().ok()?)))
        .collect();
    let total_weight: u64 = weights.iter().map(|w| w.1).sum();
    if let Some((_, w)) = weights.iter().find(|(n, _)| *n == name) {
        let share = 100.0 * *w as f64 / total_weight.max(1) as f64;
        let _ = writeln!(out, " - weight: {w} (targets {share:.1}% of total)");
    }
    let pct = |n: u64, of: u64| 100.0 * n as f64 / of.max(1) as f64;
    let _ = writeln!(
        out,
        " - {} transactions ({:.1}% of total, tps = {:.6})",
        t.transactions,
        pct(t.transactions, m.transactions),
        t.tps
    );
    let skipped = t.skipped.unwrap_or(0);
    let all = t.transactions + t.errors + skipped;
    let _ = writeln!(
        out,
        " - number of failed transactions: {} ({:.3}%)",
        t.errors,
        pct(t.errors, all)
    );
    if r.options.max_tries != 1 {
        let _ = writeln!(
            out,
            " - number of transactions retried: {} ({:.3}%)",
            t.retried,
            pct(t.retried, all)
        );
        let _ = writeln!(out, " - total number of retries: {}", t.retries);
    }
    if let Some(skipped) = t.skipped {
        let _ = writeln!(
            out,
            " - number of transactions skipped: {skipped} ({:.3}%)",
            pct(skipped, all)
        );
    }
    let _ = writeln!(out, " - latency average = {:.3} ms", t.latency_ms.mean);
    let _ = writeln!(out, " - latency stddev = {:.3} ms", t.latency_ms.stddev);
    out
}

/// A transaction type's statements as a table, timed on the client.
fn compact(out: &mut String, name: &str, lines: &[&Statement]) {
    let _ = writeln!(out, "\n  statements of {name} (client-side latencies):");
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|s| report_row(&StatementFigures::of(s))[1..].to_vec())
        .collect();
    let table = super::text_table(&REPORT_HEADER[1..], &REPORT_HEADER[2..], &rows);
    for line in table.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

/// A statement of a point over its repeats: medians of its figures, sums of its failures and
/// retries.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatementFigures {
    pub transaction: String,
    pub text: String,
    pub calls_per_transaction: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// The longest call of all the repeats.
    pub max_ms: f64,
    pub total_s: f64,
    pub share: f64,
    pub failures: u64,
    pub retries: u64,
}

impl StatementFigures {
    /// One run's statement as it stands.
    pub fn of(s: &Statement) -> StatementFigures {
        StatementFigures {
            transaction: s.transaction.clone(),
            text: s.text.clone(),
            calls_per_transaction: s.calls_per_transaction,
            mean_ms: s.mean_ms,
            p50_ms: s.p50_ms,
            p95_ms: s.p95_ms,
            p99_ms: s.p99_ms,
            max_ms: s.max_ms,
            total_s: s.total_s,
            share: s.share,
            failures: s.failures,
            retries: s.retries,
        }
    }
}

/// The statements of a point's stored results, by total time, the longest first.
pub fn over_repeats(results: &[&serde_json::Value]) -> Vec<StatementFigures> {
    let mut groups: Vec<((String, String), Vec<&serde_json::Value>)> = Vec::new();
    for s in results
        .iter()
        .flat_map(|r| r["statement_latencies"].as_array().into_iter().flatten())
    {
        let key = (
            s["transaction"].as_str().unwrap_or_default().to_string(),
            s["text"].as_str().unwrap_or_default().to_string(),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(s),
            None => groups.push((key, vec![s])),
        }
    }
    let mut out: Vec<StatementFigures> = groups
        .into_iter()
        .map(|((transaction, text), list)| {
            let median = |field: &str| {
                let v: Vec<f64> = list.iter().filter_map(|s| s[field].as_f64()).collect();
                crate::stats::spread(&v).median
            };
            let sum = |field: &str| list.iter().filter_map(|s| s[field].as_u64()).sum();
            StatementFigures {
                calls_per_transaction: median("calls_per_transaction"),
                mean_ms: median("mean_ms"),
                p50_ms: median("p50_ms"),
                p95_ms: median("p95_ms"),
                p99_ms: median("p99_ms"),
                max_ms: list
                    .iter()
                    .filter_map(|s| s["max_ms"].as_f64())
                    .fold(0.0, f64::max),
                total_s: median("total_s"),
                share: median("share"),
                failures: sum("failures"),
                retries: sum("retries"),
                transaction,
                text,
            }
        })
        .collect();
    out.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
    out
}

/// The reports' columns, with the transaction type first (the summary's table leaves it out:
/// it has a table per type).
pub const REPORT_HEADER: [&str; 12] = [
    "transaction",
    "statement",
    "calls/txn",
    "mean ms",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "total s",
    "share",
    "failures",
    "retries",
];

/// A statement's cells under `REPORT_HEADER`, as text (the reports escape them).
pub fn report_row(s: &StatementFigures) -> [String; 12] {
    [
        s.transaction.clone(),
        shortened(&s.text),
        format!("{:.2}", s.calls_per_transaction),
        format!("{:.3}", s.mean_ms),
        format!("{:.3}", s.p50_ms),
        format!("{:.3}", s.p95_ms),
        format!("{:.3}", s.p99_ms),
        format!("{:.3}", s.max_ms),
        format!("{:.2}", s.total_s),
        format!("{:.0}%", s.share * 100.0),
        s.failures.to_string(),
        s.retries.to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(script: &str, text: &str, mean_ms: f64, failures: u64, retries: u64) -> Statement {
        Statement {
            transaction: script.into(),
            order: 0,
            text: text.into(),
            as_written: true,
            calls: 10,
            calls_per_transaction: 1.0,
            failures,
            retries,
            mean_ms,
            p50_ms: mean_ms,
            p95_ms: mean_ms,
            p99_ms: mean_ms,
            max_ms: mean_ms,
            total_s: 0.0,
            share: 0.0,
            histogram: Vec::new(),
        }
    }

    #[test]
    fn scripts_print_in_pgbench_layout() {
        let a = command("a.sql", "BEGIN;", 0.0625, 0, 0);
        let b = command("b.sql", "SELECT 1;", 12.5, 3, 7);
        let mut out = String::new();
        pgbench_layout(&mut out, "a.sql", &[&a], 1, 1, 1, "");
        assert_eq!(
            out,
            "\nstatement latencies in milliseconds and failures:\n         0.062           0 BEGIN;\n"
        );
        let mut out = String::new();
        pgbench_layout(
            &mut out,
            "b.sql",
            &[&b],
            3,
            2,
            2,
            " - latency average = 12.5 ms\n",
        );
        assert_eq!(
            out,
            "\nSQL script 2: b.sql\n - latency average = 12.5 ms\n - statement latencies in milliseconds, failures and retries:\n        12.500           3          7 SELECT 1;\n"
        );
    }
}
