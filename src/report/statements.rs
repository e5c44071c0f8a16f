//! "Where the time went": a run's statements by the server's time in them
//! (`metrics::statements`), as the terminal summary's table and the markdown report's section;
//! the cells both share, and the HTML report's (html/statements.rs).

use std::fmt::Write;

use super::data::Timeline;
use crate::metrics::statements::{ClientSide, StatementTime, Statements};

/// How many statements the terminal summary names (the result keeps more).
const SUMMARY_TOP: usize = 5;
/// How much of a statement's text a table shows.
const TEXT_CHARS: usize = 72;

/// The columns of a statements table; `NUMERIC` of them are numbers.
pub const HEADER: [&str; 10] = [
    "share",
    "total ms",
    "calls",
    "per tx",
    "mean ms",
    "client mean",
    "client p99",
    "rows",
    "blocks read",
    "statement",
];
pub const NUMERIC: usize = 9;

/// What a statements table shows, as the reports say it above the tables.
pub const ABOUT: &str = "The server's own time in each statement over the measured run \
     (PostgreSQL's pg_stat_statements, MariaDB's performance_schema digests), most first; its \
     share of all the statements' time, calls per committed transaction, mean time per call \
     (ms). Client mean and p99: the same statement as the clients timed it, where its text \
     matches a statement they sent and their mean holds the server's (a statement queued in a \
     pipeline is timed until it is queued: none); the client's mean less the server's is the \
     time per call spent outside the server's own accounting (the network, the client, the \
     wait before execution).";

/// A statement's text on one line, cut to `max` characters.
pub fn short(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// One statement's cells, in `HEADER`'s order ("-" where the engine keeps no such figure, or
/// no client-side line has the statement's text).
pub fn cells(s: &StatementTime) -> [String; 10] {
    let f = &s.figures;
    let client = |v: fn(&ClientSide) -> f64| {
        s.client
            .as_ref()
            .map_or("-".into(), |c| format!("{:.3}", v(c)))
    };
    [
        format!("{:.1}%", 100.0 * s.share),
        format!("{:.1}", f.total_ms),
        f.calls.to_string(),
        s.calls_per_transaction
            .map_or("-".into(), |c| format!("{c:.2}")),
        format!("{:.3}", s.mean_ms),
        client(|c| c.mean_ms),
        client(|c| c.p99_ms),
        f.rows.to_string(),
        f.blocks_read.map_or("-".into(), |b| b.to_string()),
        short(&s.text, TEXT_CHARS),
    ]
}

/// What the statements say in one line: how many, how much time, or why there are none.
pub fn headline(st: &Statements) -> String {
    match &st.note {
        Some(note) if st.top.is_empty() => format!("no figures per statement: {note}"),
        _ => format!(
            "the server's time per statement over the measured run: {} statement{}, {:.1} ms in all",
            st.distinct,
            if st.distinct == 1 { "" } else { "s" },
            st.all.total_ms
        ),
    }
}

/// The summary's table: the first statements by time, the others in one line.
pub fn summary(out: &mut String, st: &Statements) {
    let _ = writeln!(out, "  where the time went: {}", headline(st));
    if st.top.is_empty() {
        return;
    }
    let shown = st.top.len().min(SUMMARY_TOP);
    let mut rows: Vec<Vec<String>> = st.top[..shown].iter().map(|s| cells(s).into()).collect();
    let others: Vec<&StatementTime> = st.top[shown..].iter().chain(&st.rest).collect();
    if !others.is_empty() {
        let share: f64 = others.iter().map(|s| s.share).sum();
        let ms: f64 = others.iter().map(|s| s.figures.total_ms).sum();
        let n = (st.distinct as usize).saturating_sub(shown);
        let mut row = vec![String::new(); HEADER.len()];
        row[0] = format!("{:.1}%", 100.0 * share);
        row[1] = format!("{ms:.1}");
        row[HEADER.len() - 1] = format!("{n} other statement{}", if n == 1 { "" } else { "s" });
        rows.push(row);
    }
    let table = super::text_table(&HEADER, &HEADER[..NUMERIC], &rows);
    for line in table.lines() {
        let _ = writeln!(out, "    {line}");
    }
}

/// A run as the statements' sections name it.
pub fn run_label(t: &Timeline) -> String {
    format!(
        "{} · {} · {} client{} · repeat {}",
        t.series(),
        t.workload,
        t.clients,
        if t.clients == 1 { "" } else { "s" },
        t.repeat
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::statements::Figures;

    fn time(text: &str, calls: u64, total_ms: f64, share: f64) -> StatementTime {
        StatementTime {
            text: text.into(),
            figures: Figures {
                calls,
                total_ms,
                ..Figures::default()
            },
            mean_ms: total_ms / calls as f64,
            share,
            calls_per_transaction: Some(1.0),
            client: None,
        }
    }

    #[test]
    fn the_summary_names_the_first_statements_and_sums_the_others() {
        let mut st = Statements {
            distinct: 8,
            ..Statements::default()
        };
        st.top = (0..7)
            .map(|i| {
                time(
                    &format!("UPDATE t{i}\n  SET a = $1"),
                    10,
                    10.0 - i as f64,
                    0.1,
                )
            })
            .collect();
        st.rest = Some(time("1 other statements", 1, 1.0, 0.05));
        let mut out = String::new();
        summary(&mut out, &st);
        assert!(out.contains("UPDATE t0 SET a = $1"), "{out}");
        assert!(!out.contains("UPDATE t5"), "{out}");
        assert!(
            out.contains("25.0%") && out.contains("3 other statements"),
            "{out}"
        );
        let none = Statements::absent("CREATE EXTENSION pg_stat_statements");
        let mut out = String::new();
        summary(&mut out, &none);
        assert_eq!(
            out,
            "  where the time went: no figures per statement: CREATE EXTENSION pg_stat_statements\n"
        );
        assert_eq!(short(&"x".repeat(100), 10).chars().count(), 10);
    }
}
