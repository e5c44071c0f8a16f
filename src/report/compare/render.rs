//! A comparison as text (the terminal), markdown (a pull request's comment) or JSON (its
//! schema is schema/compare.schema.json).

use super::explain::{self, Explanation};
use super::{Comparison, FigureComparison, Method, SideSummary, Verdict};
use crate::report::data::{sig3, tps_text};
use crate::report::markdown::cell;
use crate::report::text_table;

pub fn json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a comparison serializes") + "\n"
}

pub fn text(c: &Comparison) -> String {
    let mut out = String::new();
    out += &format!("A: {}\nB: {}\n", side(&c.a), side(&c.b));
    if !c.differences.is_empty() {
        out += "what differs:\n";
        let rows: Vec<Vec<String>> = c
            .differences
            .iter()
            .map(|d| {
                vec![
                    format!("  {}", d.name),
                    setting(&d.a),
                    "->".into(),
                    setting(&d.b),
                ]
            })
            .collect();
        out += &text_table(&["", "A", "", "B"], &[], &rows)
            .lines()
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect::<String>();
    }
    out += &format!("{}\n{}\n\n", method(c), confidence(c));
    let header = ["figure", "A", "B", "change", interval_header(c), "verdict"];
    let rows: Vec<Vec<String>> = c.figures.iter().map(row).collect();
    out += &text_table(&header, &header[1..5], &rows);
    out += &notes(&c.figures, "");
    for p in &c.phases {
        out += &format!("\nphase {}: {}\n", p.name, loads(p));
        let rows: Vec<Vec<String>> = p.figures.iter().map(row).collect();
        out += &text_table(&header, &header[1..5], &rows);
        out += &notes(&p.figures, "");
    }
    if !c.phases_unmatched.is_empty() {
        out += &format!(
            "phases not compared (one side only): {}\n",
            c.phases_unmatched.join(", ")
        );
    }
    out += &why(
        &c.explanation,
        "\nwhy (where the sessions' time went):\n",
        "  ",
    );
    for j in &c.fail_if {
        out += &format!(
            "fail-if {}: {}: {}\n",
            j.condition,
            if j.failed { "FAILED" } else { "ok" },
            j.reason
        );
    }
    out
}

pub fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "### dbduel compare\n\n- A: {}\n- B: {}\n",
        cell(&side(&c.a)),
        cell(&side(&c.b))
    );
    for d in &c.differences {
        out += &format!(
            "- {}: {} → {}\n",
            cell(&d.name),
            cell(&setting(&d.a)),
            cell(&setting(&d.b))
        );
    }
    out += &format!("\n{}; {}\n\n", cell(&method(c)), cell(&confidence(c)));
    out += &format!(
        "| figure | A | B | change | {} | verdict |\n|---|---:|---:|---:|---:|---|\n",
        interval_header(c)
    );
    for f in &c.figures {
        let cells: Vec<String> = row(f).iter().map(|s| cell(s)).collect();
        out += &format!("| {} |\n", cells.join(" | "));
    }
    let notes = notes(&c.figures, "- ");
    if !notes.is_empty() {
        out += "\n";
        out += &notes;
    }
    for p in &c.phases {
        out += &format!(
            "\n#### Phase {}: {}\n\n| figure | A | B | change | {} | verdict |\n|---|---:|---:|---:|---:|---|\n",
            cell(&p.name),
            cell(&loads(p)),
            interval_header(c)
        );
        for f in &p.figures {
            let cells: Vec<String> = row(f).iter().map(|s| cell(s)).collect();
            out += &format!("| {} |\n", cells.join(" | "));
        }
        let phase_notes = self::notes(&p.figures, "- ");
        if !phase_notes.is_empty() {
            out += "\n";
            out += &phase_notes;
        }
    }
    if !c.phases_unmatched.is_empty() {
        out += &format!(
            "\nPhases not compared (one side only): {}\n",
            cell(&c.phases_unmatched.join(", "))
        );
    }
    out += &cell_lines(&why(
        &c.explanation,
        "\n#### Why (where the sessions' time went)\n\n",
        "- ",
    ));
    for j in &c.fail_if {
        out += &format!(
            "\n**fail-if {}**: {}: {}\n",
            cell(&j.condition),
            if j.failed { "FAILED" } else { "ok" },
            cell(&j.reason)
        );
    }
    out
}

/// The explanation's lines: each side's verdict and active sessions, then the classes of
/// time that moved (or that none did), then the rule.
fn why(e: &Explanation, head: &str, bullet: &str) -> String {
    let mut out = head.to_string();
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| "(no verdict)".into());
    out += &format!("{bullet}A limited by {}\n", or_none(&e.limited_a));
    out += &format!("{bullet}B limited by {}\n", or_none(&e.limited_b));
    if let (Some(a), Some(b)) = (e.active_a, e.active_b) {
        out += &format!("{bullet}average active sessions: A {a:.1}, B {b:.1}\n");
    }
    if let Some(note) = &e.note {
        out += &format!("{bullet}{note}\n");
    } else {
        let moved: Vec<String> = e.moved().map(explain::line).collect();
        if moved.is_empty() {
            out += &format!(
                "{bullet}no class of the sessions' time moved beyond the noise (largest: {})\n",
                e.shifts.first().map(explain::line).unwrap_or_default()
            );
        }
        for m in moved {
            out += &format!("{bullet}moved: {m}\n");
        }
        out += &format!("{bullet}rule: {}\n", explain::SHIFT_RULE);
        out += &heads(e, bullet);
    }
    out + &statements(e, bullet)
}

/// The lock queues' heads judged over repeats: those that moved, or that none did.
fn heads(e: &Explanation, bullet: &str) -> String {
    let Some(first) = e.holders.first() else {
        return String::new();
    };
    let mut out = String::new();
    let moved: Vec<&explain::HolderShift> = e.holders.iter().filter(|h| h.moved).collect();
    if moved.is_empty() {
        out += &format!(
            "{bullet}the lock queues' heads: none moved beyond the noise (largest: {})\n",
            explain::holder_line(first)
        );
    }
    for h in moved {
        out += &format!(
            "{bullet}the lock queues' heads moved: {}\n",
            explain::holder_line(h)
        );
    }
    out + &format!("{bullet}heads' rule: {}\n", explain::HOLDER_RULE)
}

/// The statements' lines: those whose mean moved (repeats), or the largest changes, unjudged
/// (single runs).
fn statements(e: &Explanation, bullet: &str) -> String {
    let Some(from) = &e.statements_from else {
        return String::new();
    };
    let whose = if from == "server" {
        "the server's time per call"
    } else {
        "the client's latency per call"
    };
    let mut out = String::new();
    if e.statements_judged {
        let moved: Vec<&explain::StatementShift> =
            e.statements.iter().filter(|s| s.moved).collect();
        if moved.is_empty() {
            out += &format!(
                "{bullet}statements ({whose}): no statement's mean moved beyond the noise\n"
            );
        }
        for s in moved {
            out += &format!(
                "{bullet}statement moved ({whose}): {}\n",
                explain::statement_line(s)
            );
        }
    } else {
        for s in &e.statements {
            out += &format!(
                "{bullet}statement ({whose}; one run a side, not judged): {}\n",
                explain::statement_line(s)
            );
        }
    }
    if !e.statements.is_empty() {
        out += &format!("{bullet}statements' rule: {}\n", explain::STATEMENT_RULE);
    }
    out
}

/// Markdown-safe lines (each line's cells escaped as a table cell would be; the heading kept).
fn cell_lines(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with('#') || l.is_empty() {
                format!("{l}\n")
            } else {
                let (bullet, rest) = l.split_at(2.min(l.len()));
                format!("{bullet}{}\n", cell(rest))
            }
        })
        .collect()
}

fn side(s: &SideSummary) -> String {
    let what = format!("{}, {} {}", s.engine, s.workload, s.variant);
    // A bare run id says no more than its source ("run 3").
    if s.sources.len() == 1 && s.label.parse::<i64>().is_ok() {
        format!("{} ({what})", s.sources[0])
    } else if s.sources.len() == 1 && s.sources[0] != s.label {
        format!("{} ({}; {what})", s.label, s.sources[0])
    } else if s.sources.len() == 1 {
        format!("{} ({what})", s.label)
    } else {
        format!(
            "{} ({} runs: {}; {what})",
            s.label,
            s.runs,
            s.sources.join(", ")
        )
    }
}

fn setting(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(not set)".into())
}

fn method(c: &Comparison) -> String {
    let head = match c.method {
        Method::Repeats => format!(
            "method: bootstrap over repeats ({} and {} runs; means of repeats)",
            c.a.runs, c.b.runs
        ),
        Method::Seconds => {
            let s = |x: &SideSummary| {
                format!(
                    "{}: {} s in blocks of {} s",
                    x.label,
                    x.seconds.unwrap_or(0),
                    x.block_s.unwrap_or(1)
                )
            };
            format!(
                "method: circular block bootstrap over per-second windows ({}; {}), as fewer than {} repeats a side",
                s(&c.a),
                s(&c.b),
                super::MIN_REPEATS
            )
        }
    };
    format!("{head}, {} resamples, seed {}", c.resamples, c.seed)
}

fn confidence(c: &Comparison) -> String {
    format!(
        "confidence: {}% for the table as a whole (Bonferroni: each of {} figures at {}%)",
        percent(c.confidence),
        c.figures.len(),
        percent(c.per_figure_confidence)
    )
}

fn percent(share: f64) -> String {
    let p = format!("{:.2}", share * 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn interval_header(c: &Comparison) -> &'static str {
    if (c.per_figure_confidence - 0.99).abs() < 1e-9 {
        "99% interval"
    } else {
        "interval"
    }
}

fn row(f: &FigureComparison) -> Vec<String> {
    let value = |v: f64| {
        if f.unit == "tps" {
            tps_text(v)
        } else {
            sig3(v)
        }
    };
    let name = if f.unit == "ms" {
        format!("{} ms", f.name)
    } else {
        f.name.to_string()
    };
    vec![
        name,
        value(f.a),
        value(f.b),
        format!("{:+.1}%", f.difference_pct),
        f.ci_pct
            .map_or("—".into(), |[lo, hi]| format!("{lo:+.1}% .. {hi:+.1}%")),
        verdict(f.verdict).into(),
    ]
}

/// A phase's load on each side: once when they are alike.
fn loads(p: &super::phases::PhaseComparison) -> String {
    if p.load_a == p.load_b {
        p.load_a.clone()
    } else {
        format!("A {}, B {}", p.load_a, p.load_b)
    }
}

pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoDifference => "no difference beyond the noise",
        Verdict::Unknown => "noise unknown",
    }
}

/// Why a figure's noise is unknown, once when every figure has the same reason.
fn notes(figures: &[FigureComparison], bullet: &str) -> String {
    let first = figures.first().and_then(|f| f.note.as_ref());
    if let Some(note) = first
        && figures.len() > 1
        && figures.iter().all(|f| f.note.as_ref() == first)
    {
        return format!("{bullet}every figure: {note}\n");
    }
    figures
        .iter()
        .filter_map(|f| {
            f.note
                .as_ref()
                .map(|n| format!("{bullet}{}: {n}\n", f.name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{Difference, fail_if};
    use super::*;

    fn sample() -> Comparison {
        let side = |label: &str| SideSummary {
            label: label.into(),
            sources: vec!["run 1".into(), "run 2".into(), "run 3".into()],
            runs: 3,
            engine: "sqlite".into(),
            workload: "tpcb".into(),
            variant: "tpcb-like".into(),
            seconds: None,
            block_s: None,
        };
        let fig = FigureComparison {
            name: "tps",
            unit: "tps",
            higher_is_better: true,
            a: 500.0,
            b: 1000.0,
            difference: 500.0,
            difference_pct: 100.0,
            ci: Some([400.0, 600.0]),
            ci_pct: Some([80.0, 120.0]),
            verdict: Verdict::Faster,
            note: None,
        };
        let judged = fail_if::judge(
            &fail_if::parse("tps>+50%").unwrap(),
            std::slice::from_ref(&fig),
        );
        Comparison {
            a: side("@1"),
            b: side("@4"),
            differences: vec![Difference {
                name: "profile".into(),
                a: Some("default".into()),
                b: Some("unsafe".into()),
            }],
            method: Method::Repeats,
            confidence: 0.95,
            per_figure_confidence: 0.99,
            resamples: 10_000,
            seed: 16,
            figures: vec![fig.clone()],
            fail_if: vec![judged],
            failed: true,
            explanation: Explanation {
                limited_a: Some("commit: commit flushes".into()),
                limited_b: Some("lock: locks".into()),
                active_a: Some(3.9),
                active_b: Some(7.2),
                shifts: vec![explain::Shift {
                    class: "lock".into(),
                    a_pct: 8.0,
                    b_pct: 61.0,
                    ci_points: Some([45.0, 61.0]),
                    moved: true,
                    events_a: vec![],
                    events_b: vec![("Lock:transactionid".into(), 58.0)],
                    holders_a: vec![],
                    holders_b: vec![("Client:idle in transaction".into(), 70.0)],
                }],
                note: None,
                statements_from: Some("server".into()),
                statements: vec![explain::StatementShift {
                    text: "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
                        .into(),
                    a_ms: 0.21,
                    b_ms: 0.38,
                    ci_pct: Some([60.0, 104.0]),
                    moved: true,
                }],
                statements_judged: true,
                holders: vec![],
            },
            phases: vec![super::super::phases::PhaseComparison {
                name: "spike".into(),
                load_a: "rate 500/s (poisson)".into(),
                load_b: "rate 900/s (poisson)".into(),
                figures: vec![fig.clone()],
            }],
            phases_unmatched: vec!["cooldown (A only)".into()],
        }
    }

    #[test]
    fn text_and_markdown_say_the_same() {
        let c = sample();
        let t = text(&c);
        assert!(t.contains("A: @1 (3 runs: run 1, run 2, run 3; sqlite, tpcb tpcb-like)"));
        assert!(t.contains("profile") && t.contains("default") && t.contains("unsafe"));
        assert!(t.contains("each of 1 figures at 99%"), "{t}");
        assert!(
            t.contains("+80.0% .. +120.0%") && t.contains("faster"),
            "{t}"
        );
        assert!(t.contains("fail-if tps>+50%: FAILED"), "{t}");
        assert!(t.contains("  A limited by commit: commit flushes\n"), "{t}");
        assert!(
            t.contains("statement moved (the server's time per call): UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2: mean 0.210 -> 0.380 ms (+81%; +60% .. +104%)"),
            "{t}"
        );
        assert!(
            t.contains("moved: lock 8% -> 61% of active time (+45 .. +61 points); A: none; B: Lock:transactionid 58%"),
            "{t}"
        );
        let md = markdown(&c);
        assert!(
            md.contains("| tps | 500 | 1,000 | +100.0% | +80.0% .. +120.0% | faster |"),
            "{md}"
        );
        assert!(md.contains("- profile: default → unsafe"), "{md}");
        assert!(
            md.contains("#### Why (where the sessions' time went)"),
            "{md}"
        );
        assert!(
            md.contains("- average active sessions: A 3.9, B 7.2"),
            "{md}"
        );
        assert!(
            t.contains("phase spike: A rate 500/s (poisson), B rate 900/s (poisson)")
                && t.contains("phases not compared (one side only): cooldown (A only)"),
            "{t}"
        );
        assert!(
            md.contains("#### Phase spike: A rate 500/s (poisson), B rate 900/s (poisson)"),
            "{md}"
        );
        let j: serde_json::Value = serde_json::from_str(&json(&c)).unwrap();
        assert_eq!(j["phases"][0]["figures"][0]["verdict"], "faster");
        assert_eq!(j["figures"][0]["verdict"], "faster");
        assert_eq!(j["method"], "repeats");
        assert_eq!(j["explanation"]["shifts"][0]["moved"], true);
    }
}
