//! The HTML report's "statement latencies, timed on the client" section: per point, each statement timed on the
//! client (transaction type, text, calls per transaction, mean and percentiles, share of the
//! transactions' time, failures, retries), the longest in total first.

use std::fmt::Write;

use super::esc;
use crate::report::data::ReportData;
use crate::report::statement_latencies::{REPORT_HEADER, report_row};

/// The section, empty when no point timed its statements.
pub fn section(data: &ReportData) -> String {
    let points = data.statement_points();
    if points.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"statement-latencies\"><h2>Statement latencies, timed on the client</h2><p class=\"note\">\
         Timed on the client, one by one (as pgbench's -r): medians over the repeats, failures \
         and retries summed; share is of the transactions' time.</p><table class=\"data\"><thead><tr>",
    );
    for (i, h) in REPORT_HEADER.iter().enumerate() {
        let class = if i >= 2 { " class=\"num\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", esc(h));
    }
    out += "</tr></thead><tbody>";
    for p in points {
        let _ = write!(
            out,
            "<tr class=\"group\"><th colspan=\"{}\">{} &middot; {} {} &middot; {} clients</th></tr>",
            REPORT_HEADER.len(),
            esc(&p.series()),
            esc(&p.workload),
            esc(&p.variant),
            p.clients
        );
        for s in &p.statement_latencies {
            out += "<tr>";
            for (i, cell) in report_row(s).iter().enumerate() {
                let class = match i {
                    0 | 1 => "",
                    10 if s.failures > 0 => " class=\"num bad\"",
                    _ => " class=\"num\"",
                };
                let _ = write!(out, "<td{class}>{}</td>", esc(cell));
            }
            out += "</tr>";
        }
    }
    out += "</tbody></table></section>\n";
    out
}
