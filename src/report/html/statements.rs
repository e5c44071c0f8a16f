//! The HTML report's "Where the time went": for each run, its statements by the server's time
//! in them (share drawn as a bar, calls, per transaction, mean, rows, blocks read), the others
//! summed; a run without figures says why.

use std::fmt::Write;

use super::super::data::Timeline;
use super::super::statements::{ABOUT, HEADER, NUMERIC, cells, headline, run_label};
use super::svg::w;
use super::{bar_cell, esc};

pub(super) fn section(timelines: &[Timeline]) -> String {
    let runs: Vec<(&Timeline, &crate::metrics::statements::Statements)> = timelines
        .iter()
        .filter_map(|t| Some((t, t.statements.as_ref()?)))
        .collect();
    if runs.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<section id=\"statements\"><h2>Where the time went</h2><p class=\"note\">{}</p>",
        esc(ABOUT)
    );
    for (t, st) in runs {
        w!(out, "<h3>{}</h3>", esc(&run_label(t)));
        if st.top.is_empty() {
            w!(out, "<p class=\"empty\">{}</p>", esc(&headline(st)));
            continue;
        }
        out += "<table class=\"data statements\"><thead><tr>";
        for (i, h) in HEADER.iter().enumerate() {
            let class = if i < NUMERIC { " class=\"num\"" } else { "" };
            w!(out, "<th{class}>{}</th>", esc(h));
        }
        out += "</tr></thead><tbody>";
        for s in st.top.iter().chain(&st.rest) {
            let c = cells(s);
            out += "<tr>";
            out += &bar_cell(&esc(&c[0]), s.share);
            for v in &c[1..NUMERIC] {
                w!(out, "<td class=\"num\">{}</td>", esc(v));
            }
            w!(
                out,
                "<td><code title=\"{}\">{}</code></td></tr>",
                esc(&s.text),
                esc(&c[NUMERIC])
            );
        }
        out += "</tbody></table>";
    }
    out += "</section>\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::statements::Figures;
    use crate::metrics::statements::{StatementTime, Statements};

    #[test]
    fn a_table_per_run_and_a_reason_where_there_are_none() {
        let update = StatementTime {
            text: "UPDATE t SET a = a + $1 WHERE k < $2".into(),
            figures: Figures {
                calls: 40,
                total_ms: 8.0,
                rows: 40,
                blocks_read: Some(3),
                ..Figures::default()
            },
            mean_ms: 0.2,
            share: 0.8,
            calls_per_transaction: Some(1.0),
            client: None,
        };
        let run = |repeat, statements| Timeline {
            engine: "postgres".into(),
            profile: "default".into(),
            workload: "tpcb".into(),
            clients: 2,
            repeat,
            statements: Some(statements),
            embedded: None,
            ..Timeline::default()
        };
        let with = Statements {
            distinct: 1,
            top: vec![update],
            ..Statements::default()
        };
        let html = section(&[
            run(1, with),
            run(2, Statements::absent("CREATE EXTENSION pg_stat_statements")),
            Timeline::default(),
        ]);
        assert!(html.contains("WHERE k &lt; $2"), "{html}");
        assert!(
            html.contains("width:80.0%") && html.contains(">1.00<"),
            "{html}"
        );
        assert!(
            html.contains("no figures per statement: CREATE EXTENSION"),
            "{html}"
        );
        assert_eq!(html.matches("<h3>").count(), 2, "{html}");
        assert!(section(&[Timeline::default()]).is_empty());
    }
}
