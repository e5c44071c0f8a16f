//! The server's counters as people read them: the summary's lines (the counters that moved
//! most by `metrics::counters::moved_most`'s rule, the background events, what could not be
//! read) and the reports' table of the counters that moved most per point, HTML and
//! markdown, from the stored results.

use std::fmt::Write;

use serde::Serialize;

use super::data::{PointSummary, ReportData};
use crate::metrics::counters::{self, ServerCounters};

/// One counter as a report shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CounterFigure {
    pub name: String,
    pub figure: String,
}

/// The rule, as the summary and the reports state it.
pub const RULE: &str = "the headline counters first, then the others by the share of their count the measured run made; per transaction (gauges: mean and max)";

/// The summary's lines for a run's counters.
pub fn summary(out: &mut String, c: &ServerCounters) {
    let moved: Vec<String> = counters::moved_most(c)
        .iter()
        .map(|(n, t)| format!("{n} {}", counters::figure(t)))
        .collect();
    let _ = writeln!(
        out,
        "  server counters ({} readings, once a second; moved most: {RULE}): {}",
        c.readings,
        if moved.is_empty() {
            "none moved".to_string()
        } else {
            moved.join(", ")
        }
    );
    for b in &c.background {
        let tps = match (b.tps_in, b.tps_out) {
            (Some(i), Some(o)) => format!(
                ": {i:.0} tps in them against {o:.0} in the others, {}",
                if b.differs {
                    "beyond the noise"
                } else {
                    "within the noise"
                }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  background: {} in {} s ({}){tps}",
            b.event,
            b.seconds.len(),
            b.counters.join(", ")
        );
    }
    for u in &c.unread {
        let _ = writeln!(out, "  warning: server counters not read: {u}");
    }
    if let Some(why) = &c.stopped {
        let _ = writeln!(out, "  warning: {why}");
    }
}

/// The counters that moved most in a stored result (its `server_counters`), empty where it
/// has none.
pub fn of_result(result: &serde_json::Value) -> Vec<CounterFigure> {
    let Ok(c) = serde_json::from_value::<ServerCounters>(result["server_counters"].clone()) else {
        return Vec::new();
    };
    counters::moved_most(&c)
        .into_iter()
        .map(|(n, t)| CounterFigure {
            name: n.clone(),
            figure: counters::figure(t),
        })
        .collect()
}

/// The seconds a stored result's counters say `event` covered ("checkpoint", "autovacuum").
pub fn covered(result: &serde_json::Value, event: &str) -> std::collections::BTreeSet<u64> {
    result["server_counters"]["background"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["event"] == event)
        .flat_map(|b| b["seconds"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_u64())
        .collect()
}

fn with_counters(data: &ReportData) -> Vec<&PointSummary> {
    data.points
        .iter()
        .filter(|p| !p.counters.is_empty())
        .collect()
}

fn point_label(p: &PointSummary) -> String {
    let profile = if p.profile.is_empty() {
        String::new()
    } else {
        format!(" {}", p.profile)
    };
    format!(
        "{}{profile}, {} {}, {} clients",
        p.engine, p.workload, p.variant, p.clients
    )
}

fn listed(p: &PointSummary, sep: &str, esc: impl Fn(&str) -> String) -> String {
    p.counters
        .iter()
        .map(|c| format!("{} {}", esc(&c.name), esc(&c.figure)))
        .collect::<Vec<_>>()
        .join(sep)
}

/// The markdown section (empty where no point has counters).
pub fn markdown(data: &ReportData) -> String {
    let points = with_counters(data);
    if points.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## The counters that moved most\n\nThe server's counters over the first repeat's measured run: {RULE}.\n\n| point | counters |\n|---|---|\n"
    );
    for p in points {
        let _ = writeln!(
            out,
            "| {} | {} |",
            super::markdown::cell(&point_label(p)),
            listed(p, "; ", super::markdown::cell)
        );
    }
    out + "\n"
}

/// The HTML section (empty where no point has counters).
pub fn html(data: &ReportData) -> String {
    let points = with_counters(data);
    if points.is_empty() {
        return String::new();
    }
    let esc = super::html::esc;
    let mut out = format!(
        "<section id=\"counters\"><h2>The counters that moved most</h2><p class=\"note\">The \
         server's counters over the first repeat's measured run: {}.</p><table class=\"data\">\
         <thead><tr><th>point</th><th>counters</th></tr></thead><tbody>",
        esc(RULE)
    );
    for p in points {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            esc(&point_label(p)),
            listed(p, "<br>", esc)
        );
    }
    out + "</tbody></table></section>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reports_list_each_points_counters() {
        let result = serde_json::json!({"server_counters": {
        "readings": 5, "measured_s": 4.0, "seconds": [],
        "counters": {
            "v.commits": {"kind": "cumulative", "roles": ["headline"], "from": 10.0,
                          "total": 40.0, "per_s": 10.0, "per_transaction": 1.0},
            "v.<rare>": {"kind": "cumulative", "from": 0.0, "total": 2.0, "per_s": 0.5,
                         "per_transaction": 0.05}
        }}});
        let figures = of_result(&result);
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].name, "v.commits");
        assert_eq!(figures[0].figure, "1.00 /tx");
        let data = ReportData {
            points: vec![PointSummary {
                engine: "postgres".into(),
                counters: figures,
                ..PointSummary::default()
            }],
            ..ReportData::default()
        };
        let md = markdown(&data);
        assert!(
            md.contains("| postgres, ")
                && md.contains("v.commits 1.00 /tx; v.&lt;rare&gt; 0.050 /tx |"),
            "{md}"
        );
        let page = html(&data);
        assert!(page.contains("v.&lt;rare&gt; 0.050 /tx"), "{page}");
        assert!(of_result(&serde_json::json!({})).is_empty());
        let events = serde_json::json!({"server_counters": {"background": [
            {"event": "checkpoint", "counters": [], "seconds": [3, 4], "differs": false},
            {"event": "autovacuum", "counters": [], "seconds": [7], "differs": false}]}});
        assert_eq!(
            covered(&events, "checkpoint")
                .into_iter()
                .collect::<Vec<_>>(),
            vec![3, 4]
        );
        assert!(covered(&result, "checkpoint").is_empty());
        assert!(markdown(&ReportData::default()).is_empty());
    }
}
