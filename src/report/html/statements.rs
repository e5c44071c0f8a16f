//! The HTML report's "Where the time went": for each run, its statements by the server's time
//! in them (share drawn as a bar, calls, per transaction, mean, rows, blocks read), the others
//! summed; a run without figures says why.

use std::fmt::Write;

use super::super::data::Timeline;
use super::super::statements::{HEADER, NUMERIC, cells, headline, run_label};
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
    let mut out = String::from(
        "<section id=\"statements\"><h2>Where the time went</h2><p class=\"note\">The server's \
         own time in each statement over the measured run (PostgreSQL's pg_stat_statements, \
         MariaDB's performance_schema digests), most first; its share of all the statements' \
         time, calls per committed transaction, mean time per call.</p>",
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
