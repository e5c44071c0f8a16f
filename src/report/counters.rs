//! The server's counters as people read them: the summary's lines (the counters that moved
//! most by `metrics::counters::moved_most`'s rule, the background events, what could not be
//! read); from a stored result, the counters that moved most and the seconds a background
//! event covered, for the reports (their tables in markdown.rs and html/).

use std::fmt::Write;

use super::data::{COUNTERS_RULE as RULE, CounterFigure};
use crate::metrics::counters::{self, ServerCounters};

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
    if c.missed > 0 {
        let _ = writeln!(
            out,
            "  warning: {} of the server counters' readings were missed (the server answered slower than once a second)",
            c.missed
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_results_give_their_counters_and_events() {
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
    }
}
